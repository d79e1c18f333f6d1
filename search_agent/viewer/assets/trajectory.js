// Item pages: one trajectory (and a side-by-side compare), a task, a group.
'use strict';

function verdictBadge(g) {
  if (!g) return null;
  if (g.correct === true) return h('span', { class: 'badge ok' }, 'correct');
  if (g.correct === false) return h('span', { class: 'badge bad' }, 'wrong');
  return h('span', { class: 'badge warn' }, g.judge_error ? 'judge error' : 'ungraded');
}

function kv(pairs) {
  return h('table', {}, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, typeof v === 'object' && !(v instanceof Node) ? JSON.stringify(v) : v))));
}

function gradePanel(d) {
  const g = d.grade;
  if (!g) return null;
  return h('div', { class: 'panel', id: 'grade' }, h('h3', {}, 'Judge ', verdictBadge(g)), kv([
    ['prediction', g.prediction ?? d.final_answer], ['reference', g.reference ?? (d.task || {}).answer],
    ['method', g.grade_method], ['confidence', g.confidence], ['extracted answer', g.extracted_answer],
    ['judge reason', g.judge_reasoning], ['judge reply', g.judge_response ? h('details', {}, h('summary', {}, `${g.judge_response.length} chars`), h('pre', {}, g.judge_response)) : null],
    ['judge error', g.judge_error],
    ['judge attempts', g.judge_attempts], ['leaked URLs', (g.leaked_urls || []).join(' ')],
    ['redacted', g.redacted ? 'yes (encrypted benchmark: no text stored in results)' : null]]));
}

function rewardPanel(d) {
  const r = d.reward;
  const parts = [];
  if (r) parts.push(kv([['reward', fmt(r.reward)], ['advantage', fmt(r.advantage) + ' (' + r.advantage_how + ')'],
    ['correct (y)', fmt(r.correct)], ['claim coverage (c)', fmt(r.coverage)], ['group', r.group_id],
    ['group rewards', (r.group_rewards || []).map((x) => fmt(x)).join(', ')],
    ['learner update', r.update === null || r.update === undefined ? 'not consumed yet' : `${r.update}${r.dropped ? ' (dropped by dynamic sampling)' : ''}`],
    ['policy versions of trained tokens', Object.entries(r.versions || {}).map(([v, n]) => `v${v}: ${n}`).join(', ')]]));
  if (d.claims && d.claims.length) parts.push(h('table', { id: 'claims' }, h('tr', {}, ['subject', 'relation', 'object', 'source', 'established'].map((x) => h('th', {}, x))),
    d.claims.map((c) => h('tr', {}, h('td', {}, c.subject), h('td', {}, c.relation), h('td', {}, c.object), h('td', {}, c.source || ''),
      h('td', {}, c.established === null ? h('span', { class: 'badge' }, 'not judged here') : h('span', { class: 'badge ' + (c.established ? 'ok' : 'bad') }, c.established ? 'established' : 'missing'))))));
  if (!parts.length) return null;
  return h('div', { class: 'panel', id: 'reward' }, h('h3', {}, 'Reward and required claims'), parts);
}

function filterPanel(d) {
  const f = d.filter;
  if (!f) return null;
  const cls = f.outcome === 'kept' ? 'ok' : 'bad';
  return h('div', { class: 'panel', id: 'filter-decision' }, h('h3', {}, 'Filter ', h('span', { class: 'badge ' + cls }, f.outcome)),
    kv([['stage', f.stage], ['reason', f.reason], ['detail', f.detail ? h('pre', {}, f.detail) : null]]));
}

function tokensPanel(d) {
  const t = d.tokens;
  const body = [];
  if (t) {
    const total = t.mask_runs.reduce((a, [, n]) => a + n, 0) || 1;
    body.push(kv([['tokens', t.n], ['trained (loss mask 1)', t.trained], ['policy versions (generated tokens)',
      Object.entries(t.versions).map(([v, n]) => `v${v}: ${n}`).join(', ') || 'none'],
    ['mean sampling logprob (trained)', fmt(t.mean_logprob)], ['routing record', t.routed_experts ? 'yes' : 'no']]),
    h('div', { class: 'mask-strip', title: 'loss mask over the token sequence (green = trains)' },
      t.mask_runs.map(([v, n]) => h('span', { class: v ? 'on' : 'off', style: `width:${(100 * n) / total}%` }))));
  }
  if (d.tokens_note) body.push(h('p', { class: 'why' }, 'token record: ' + d.tokens_note));
  if (d.reward && typeof d.reward.advantage === 'number' && Math.abs(d.reward.advantage) < 1e-9) {
    body.push(h('p', { class: 'why', id: 'zero-advantage' }, 'advantage 0: its tokens carry loss but contribute no policy gradient'));
  }
  const turns = d.steps.filter((s) => s.role === 'assistant');
  const masked = new Map();
  for (const s of turns.filter((x) => !x.trains)) masked.set(s.why, [...(masked.get(s.why) || []), '#' + s.i]);
  const n = [...masked.values()].reduce((a, v) => a + v.length, 0);
  body.push(h('p', { id: 'mask-summary' }, `${turns.length - n} of ${turns.length} assistant turns train`
    + [...masked].map(([why, ids]) => `; no loss on ${ids.join(', ')}: ${why}`).join('')));
  return h('div', { class: 'panel', id: 'tokens' }, h('h3', {}, 'Tokens and loss mask'), body);
}

function hits(block) {
  return block.hits.map((x) => h('div', { class: 'hit' }, h('span', { class: 'ref' }, '[' + x.ref_id + ']'), h('b', {}, x.title), ' ',
    x.url ? h('a', { class: 'url', href: x.url, target: '_blank', rel: 'noopener' }, x.url) : null,
    x.text ? h('div', { class: 'text' }, x.text) : null, x.note ? h('div', { class: 'why' }, 'note: ' + x.note) : null,
    x.evidence ? h('div', {}, h('b', {}, 'evidence: '), h('span', { class: 'text' }, x.evidence)) : null,
    x.summary ? h('div', {}, h('b', {}, 'summary: '), h('span', { class: 'text' }, x.summary)) : null));
}

function observation(s) {
  return (s.blocks || [{ kind: 'text', text: s.content }]).map((b) => {
    if (b.kind === 'search') return h('div', { class: 'search-block' }, h('div', {}, h('b', {}, 'search '), `"${b.query}": ${b.status}`), hits(b));
    if (b.kind === 'pages') return h('div', { class: 'pages-block' }, hits(b));
    if (b.kind === 'omitted') return h('div', { class: 'event' }, `observation omitted (${b.tool}, ${b.chars} chars)`);
    return h('div', { class: 'text' }, b.text);
  });
}

function stepEl(s) {
  const open = s.role === 'assistant' || (s.role === 'user' && s.content.length < 1500);
  const badge = s.role === 'assistant' ? h('span', { class: 'badge ' + (s.trains ? 'ok' : 'warn') }, s.trains ? 'trains' : 'no loss') : null;
  const calls = s.tool_calls.map((c) => c.name + '(' + short(JSON.stringify(c.arguments), 90) + ')').join(', ');
  const head = s.role === 'tool' ? `tool: ${s.name} — ${short(s.content.split('\n')[0], 100)}${s.chars ? ` (${s.chars} chars)` : ''}`
    : s.role === 'system' ? `system prompt (${s.content.length} chars)` : s.role + (calls ? ' → ' + calls : '');
  return h('details', { class: `step ${s.role}${s.trains || s.role !== 'assistant' ? '' : ' masked'}`, id: 'step-' + s.i, open },
    h('summary', {}, h('span', { class: 'muted' }, '#' + s.i + ' '), badge, s.invalid ? h('span', { class: 'badge bad' }, 'invalid') : null, head),
    h('div', { class: 'step-body' },
      h('div', { class: 'why tokens-line' }, s.why, s.tokens ? ` · ${s.tokens.n} tokens${s.tokens.trained !== undefined ? ` (${s.tokens.trained} with loss)` : ''}, policy v${s.tokens.version}, mean logprob ${fmt(s.tokens.mean_logprob)}` : ''),
      s.left_context ? h('div', { class: 'why' }, '⤷ ' + s.left_context) : null,
      s.reasoning ? h('details', { class: 'reasoning' }, h('summary', {}, `reasoning (${s.reasoning.length} chars)`), h('div', { class: 'text' }, s.reasoning)) : null,
      s.role === 'tool' ? observation(s) : h('div', { class: 'text' }, s.content),
      s.tool_calls.map((c) => h('div', { class: 'toolcall' }, h('b', {}, 'call ' + c.name), h('pre', {}, JSON.stringify(c.arguments, null, 1))))));
}

function timeline(d) {
  const events = new Map((d.context_events || []).map((e) => [e.at_message, e]));
  const out = [];
  d.steps.forEach((s) => {
    const e = events.get(s.i);
    if (e) out.push(h('div', { class: 'event' }, h('b', {}, `context ${e.policy} before step ${e.step}`),
      `: ${e.tokens_before} → ${e.tokens_after} tokens; earlier turns left the model's view`,
      h('details', {}, h('summary', {}, 'note carried'), h('div', { class: 'text' }, e.note || ''))));
    out.push(stepEl(s));
  });
  return out;
}

function trajectoryView(d, runName) {
  const r = d.reward || {};
  return h('div', { class: 'trajectory', 'data-id': d.id },
    h('p', { class: 'muted provenance' }, runName, ' · ', d.id, ' · task ', d.task_id),
    h('div', { class: 'question' }, d.question),
    h('div', { class: 'toolbar' }, h('span', { class: 'badge' }, d.status), verdictBadge(d.grade),
      d.encrypted ? h('span', { class: 'badge warn' }, 'encrypted on disk') : null, d.decrypted ? h('span', { class: 'badge warn' }, 'decrypted in memory') : null,
      r.reward !== undefined ? h('span', { class: 'badge' }, 'reward ' + fmt(r.reward)) : null,
      r.advantage !== undefined ? h('span', { class: 'badge' }, 'advantage ' + fmt(r.advantage)) : null,
      d.context_policy ? h('span', { class: 'badge' }, 'context: ' + d.context_policy) : null,
      d.policy_model ? h('span', { class: 'badge' }, d.policy_model) : null,
      (d.budgets_hit || []).map((b) => h('span', { class: 'badge warn' }, 'budget: ' + b))),
    h('div', { class: 'panel', id: 'final-answer' }, h('h3', {}, 'Final answer'), h('div', { class: 'text' }, d.final_answer ?? '(none)'),
      d.error ? h('pre', { class: 'why' }, d.error) : null),
    gradePanel(d), rewardPanel(d), filterPanel(d), tokensPanel(d),
    d.task && d.task.evidence && d.task.evidence.length ? h('p', { class: 'muted' }, 'task evidence: ' + d.task.evidence.join(' · ')) : null,
    d.task_graph ? graphPanel(d.task_graph, 'Evidence graph (blue: pages this trajectory saw)') : null,
    h('h3', {}, `Steps (${d.steps.length} messages)`), h('div', { class: 'steps' }, timeline(d)),
    d.mas ? masPanel(d.mas) : null);
}

function masPanel(m) {
  return h('div', { class: 'panel', id: 'mas' }, h('h3', {}, `MAS: ${m.searchers.length} searchers`),
    kv([['verifier status', m.verifier_status], ['fallback to a searcher answer', m.fallback ? String(m.fallback) : null],
      ['searcher answers', (m.searcher_answers || []).map((a) => a ?? '(none)').join(' · ')]]),
    m.searchers.map((s, k) => h('details', { class: 'step searcher', id: 'searcher-' + k },
      h('summary', {}, `searcher ${k + 1}: ${s.status}, answer ${s.final_answer ?? '(none)'}, ${s.steps.length} messages`),
      h('div', { class: 'step-body' }, timeline(s)))));
}

function graphPanel(svg, title) {
  const wrap = h('div', { class: 'panel graph-wrap', id: 'graph' }, h('h3', {}, title));
  wrap.insertAdjacentHTML('beforeend', svg);
  return wrap;
}

function taskView(d, runName) {
  const wrap = h('div', { class: 'panel graph-wrap', id: 'graph' }, h('h3', {}, 'Evidence graph'));
  if (d.graph_svg) wrap.insertAdjacentHTML('beforeend', d.graph_svg); else wrap.append(h('p', { class: 'muted' }, 'no claims or evidence to draw'));
  const dec = d.decision;
  return h('div', { class: 'task' }, h('p', { class: 'muted' }, runName, ' · task ', d.id, d._split ? ' · split ' + d._split : ''),
    h('div', { class: 'question' }, d.question),
    h('div', { class: 'panel' }, kv([['answer', d.answer], ['aliases', (d.aliases || []).join(', ')], ['evidence', (d.evidence || []).join(' · ')]])),
    dec ? h('div', { class: 'panel', id: 'filter-decision' }, h('h3', {}, 'Decision ', h('span', { class: 'badge' }, dec.outcome || dec.decision)), kv(Object.entries(dec))) : null,
    d.claims && d.claims.length ? h('table', { id: 'claims' }, h('tr', {}, ['subject', 'relation', 'object', 'source'].map((x) => h('th', {}, x))),
      d.claims.map((c) => h('tr', {}, h('td', {}, c.subject), h('td', {}, c.relation), h('td', {}, c.object), h('td', {}, c.source || '')))) : null,
    wrap, jsonBlock('meta', d.meta));
}

function groupView(d, runName) {
  return h('div', { class: 'group' }, h('p', { class: 'muted' }, runName, ' · group ', d.group_id, ' · task ', d.task_id),
    h('table', {}, h('tr', {}, ['trajectory', 'reward', 'advantage', 'correct', 'coverage', 'versions'].map((x) => h('th', {}, x))),
      d.trajectories.map((t) => { const r = t.reward_view || {}; return h('tr', {}, h('td', {}, t.trajectory_id), h('td', {}, fmt(t.reward)),
        h('td', {}, fmt(r.advantage)), h('td', {}, fmt(t.correct)), h('td', {}, fmt(t.coverage)),
        h('td', {}, Object.entries(r.versions || {}).map(([v, n]) => `v${v}: ${n}`).join(', '))); })));
}

function otherRuns(run, d) {
  const out = [];
  V.index.runs.forEach((r, k) => {
    if (k === run) return;
    const row = r.rows.find((x) => x.task_id === d.task_id);
    if (row) out.push([k, row]);
  });
  return out;
}

async function renderItem(run, i, st) {
  const d = await getDetail(run, i);
  const name = V.index.runs[run].id;
  if (d.type === 'sealed') return h('div', {}, canaryForm(), h('p', { class: 'muted' }, 'encrypted: enter the canary to read it'));
  if (d.type === 'task') return taskView(d, name);
  if (d.type === 'decision') return h('div', {}, h('div', { class: 'question' }, d.question),
    h('div', { class: 'panel', id: 'filter-decision' }, h('h3', {}, 'Decision (no task was made)'), kv(Object.entries(d.decision))));
  if (d.type === 'group') return groupView(d, name);
  const others = otherRuns(run, d);
  const bar = h('div', { class: 'toolbar' }, h('a', { href: '#run=' + run }, '← back to the list'),
    i > 0 ? h('a', { href: `#run=${run}&t=${i - 1}`, title: 'key k' }, '‹ previous') : null,
    i + 1 < V.index.runs[run].n ? h('a', { href: `#run=${run}&t=${i + 1}`, id: 'next-item', title: 'key j' }, 'next ›') : null,
    others.length ? h('label', {}, 'compare with ', h('select', { id: 'compare-select', onchange: (e) => go({ run, t: i, vs: e.target.value }) },
      h('option', { value: '' }, '—'), others.map(([k, row]) => h('option', { value: k + ':' + row.i, selected: st.vs === k + ':' + row.i }, V.index.runs[k].id)))) : null);
  if (!st.vs) return h('div', {}, bar, trajectoryView(d, name));
  const [k, j] = st.vs.split(':').map(Number);
  const other = await getDetail(k, j);
  return h('div', {}, bar, h('div', { class: 'compare', id: 'compare' }, trajectoryView(d, name), trajectoryView(other, V.index.runs[k].id)));
}
