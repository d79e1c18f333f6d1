// The viewer app: data source (embedded or server), routing, run pages.
'use strict';
const PAGE_SIZE = 50;
const V = { index: null, details: new Map(), state: {} };

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
const fmt = (x, d = 3) => (typeof x === 'number' ? (Number.isInteger(x) ? String(x) : x.toFixed(d)) : (x ?? ''));
const short = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + '…' : s || '');

function readJson(id) {
  const el = document.getElementById(id);
  return el ? JSON.parse(el.textContent) : null;
}

// The app runs before the static page's detail blocks are parsed (they come
// after it): a detail not there yet is read again once the page is complete.
const domReady = new Promise((resolve) => {
  if (document.readyState !== 'loading') resolve();
  else document.addEventListener('DOMContentLoaded', resolve);
});

async function loadIndex() {
  const embedded = readJson('viewer-index');
  if (embedded) return embedded;
  const r = await fetch('api/index');
  if (!r.ok) throw new Error('api/index: HTTP ' + r.status);
  return r.json();
}

async function getDetail(run, i) {
  const key = run + ':' + i;
  if (V.details.has(key)) return V.details.get(key);
  let d = readJson('d-' + run + '-' + i);
  if (!d && document.readyState === 'loading') {
    await domReady;
    d = readJson('d-' + run + '-' + i);
  }
  if (!d && V.index.source === 'server') {
    const r = await fetch('api/detail?run=' + run + '&i=' + i);
    if (!r.ok) throw new Error('api/detail: HTTP ' + r.status + ' ' + (await r.text()));
    d = await r.json();
  }
  if (!d) throw new Error('no detail for run ' + run + ' item ' + i + ' in this page');
  if (d.sealed) {
    if (!V.open) return { type: 'sealed' };
    d = V.open(d.sealed);
  }
  for (const s of d.steps || []) if (s.pool !== undefined) s.content = V.index.pool[s.pool];
  V.details.set(key, d);
  return d;
}

function parseHash() {
  const out = {};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    if (!part) continue;
    const [k, v] = part.split('=');
    out[decodeURIComponent(k)] = decodeURIComponent(v || '');
  }
  return out;
}
function go(params) {
  location.hash = Object.entries(params).filter(([, v]) => v !== '' && v !== undefined)
    .map(([k, v]) => k + '=' + encodeURIComponent(v)).join('&');
}

function renderHeader(st) {
  const sel = h('select', { id: 'run-select', onchange: (e) => go({ run: e.target.value }) },
    V.index.runs.map((r, k) => h('option', { value: k, selected: String(k) === String(st.run) },
      `${r.id} — ${r.kinds.filter((x) => x !== 'manifest').join(', ')} (${r.n})`)));
  document.querySelector('header').replaceChildren(
    h('h1', {}, 'search_agent viewer'), h('span', { class: 'muted' }, V.index.workdir),
    h('label', {}, 'run ', sel),
    h('a', { href: '#run=' + st.run }, 'list'),
    V.index.source === 'server' ? h('a', { id: 'reload', href: '?reload=1' + location.hash }, 'reload from disk') : '',
    V.index.runs.length > 1 ? h('a', { id: 'compare-runs-link', href: '#compare=' + st.run + ',' + ((+st.run + 1) % V.index.runs.length) }, 'compare runs') : '');
}

function bars(block) {
  const max = Math.max(1, ...Object.values(block.counts));
  return h('div', { class: 'bar-block' }, h('h4', {}, block.title),
    Object.entries(block.counts).map(([k, v]) => h('div', { class: 'bar' }, h('span', { title: k }, short(k, 22)),
      h('div', {}, h('div', { class: 'fill', style: `width:${(100 * v) / max}%` })), h('span', {}, v))));
}

function chart(c) {
  const W = 220, H = 60, xs = c.points.map((p) => p[0]), ys = c.points.map((p) => p[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const sx = (x) => 4 + ((x - x0) / (x1 - x0 || 1)) * (W - 8), sy = (y) => H - 4 - ((y - y0) / (y1 - y0 || 1)) * (H - 8);
  const svg = `<svg width="${W}" height="${H}"><polyline points="${c.points.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join(' ')}"/></svg>`;
  const box = h('div', { class: 'chart', title: `min ${fmt(y0)}, max ${fmt(y1)}` }, h('h4', {}, c.title),
    h('div', { class: 'why' }, `last ${fmt(ys[ys.length - 1])} · min ${fmt(y0)} · max ${fmt(y1)}`));
  box.insertAdjacentHTML('beforeend', svg);
  return box;
}

function jsonBlock(name, obj) {
  return h('details', { class: 'panel' }, h('summary', {}, name), h('pre', {}, JSON.stringify(obj, null, 1)));
}

function renderSummary(run) {
  const s = run.summary;
  return h('section', { id: 'summary' },
    h('div', { class: 'cards' }, s.cards.map((c) => h('div', { class: 'card' }, h('div', { class: 'label' }, c.label),
      h('div', { class: 'value' }, c.value), c.note ? h('div', { class: 'note' }, c.note) : null))),
    h('div', { class: 'bars' }, s.bars.map(bars)),
    s.tables.map((t) => h('div', { class: 'panel' }, h('h3', {}, t.title), h('table', {},
      h('tr', {}, t.head.map((x) => h('th', {}, x))), t.rows.map((r) => h('tr', {}, r.map((x) => h('td', {}, fmt(x)))))))),
    s.charts.length ? h('details', { class: 'panel', open: true, id: 'charts' }, h('summary', {}, `per-step metrics (${s.charts.length} series)`),
      h('div', {}, s.charts.map(chart))) : null,
    Object.entries(s.images || {}).map(([name, uri]) => h('details', { class: 'panel' }, h('summary', {}, name),
      h('img', { src: uri, alt: name, style: 'max-width:100%' }))),
    Object.entries(s.json).map(([k, v]) => jsonBlock(k, v)),
    run.errors.length ? h('details', { class: 'panel' }, h('summary', {}, `${run.errors.length} unreadable lines/files`),
      h('pre', {}, run.errors.join('\n'))) : null);
}

const COLUMNS = ['question', 'id', 'task_id', 'status', 'verdict', 'answer', 'reference', 'tools', 'steps',
  'reward', 'advantage', 'outcome', 'stage', 'reason', 'split', 'hops', 'claims', 'rollouts'];

function filteredRows(run, st) {
  const q = (st.q || '').toLowerCase();
  const rows = run.rows.filter((r) => (!q || (r.question + ' ' + r.id + ' ' + (r.answer || '')).toLowerCase().includes(q))
    && (!st.f || [r.verdict, r.status, r.outcome].includes(st.f)));
  if (!st.sort) return rows;
  const key = st.sort, sign = st.desc ? -1 : 1;
  const val = (r) => (r[key] === undefined || r[key] === null ? '' : r[key]);
  return rows.slice().sort((a, b) => {
    const x = val(a), y = val(b);
    return sign * (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y)));
  });
}

function sortHeader(runIdx, st, c) {
  const on = st.sort === c;
  return h('th', { class: 'sortable', title: 'sort by ' + c, 'data-col': c,
    onclick: () => go({ run: runIdx, q: st.q, f: st.f, sort: c, desc: on && !st.desc ? '1' : '' }) },
  c + (on ? (st.desc ? ' ▼' : ' ▲') : ''));
}

function renderList(runIdx, st) {
  const run = V.index.runs[runIdx];
  const rows = filteredRows(run, st);
  const page = Math.max(0, Math.min(+(st.page || 0), Math.floor((rows.length - 1) / PAGE_SIZE)));
  const cols = COLUMNS.filter((c) => run.rows.some((r) => r[c] !== undefined && r[c] !== ''));
  const values = [...new Set(run.rows.flatMap((r) => [r.verdict, r.status, r.outcome]).filter(Boolean))];
  const nav = (p) => go({ ...st, run: runIdx, page: p });
  const pager = h('div', { class: 'pager' },
    h('button', { id: 'prev-page', disabled: page === 0, onclick: () => nav(page - 1) }, '‹ prev'),
    h('span', { id: 'page-info' }, `page ${page + 1} of ${Math.max(1, Math.ceil(rows.length / PAGE_SIZE))} · ${rows.length} of ${run.rows.length}`),
    h('button', { id: 'next-page', disabled: (page + 1) * PAGE_SIZE >= rows.length, onclick: () => nav(page + 1) }, 'next ›'));
  const search = h('input', { id: 'search', placeholder: 'search question / id / answer', value: st.q || '' });
  search.addEventListener('change', (e) => go({ run: runIdx, q: e.target.value, f: st.f }));
  const table = h('table', { id: 'rows' }, h('tr', {}, cols.map((c) => sortHeader(runIdx, st, c))),
    rows.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE).map((r) => h('tr', {
      class: 'row', 'data-i': r.i, onclick: () => go({ run: runIdx, t: r.i }) },
    cols.map((c) => h('td', { class: c === 'verdict' ? 'verdict-' + r[c] : (c === 'question' ? 'q' : null) },
      c === 'question' ? (r.encrypted ? h('span', { class: 'badge warn' }, 'encrypted') : null) : null,
      c === 'question' ? r[c] : short(fmt(r[c]), 80))))));
  return h('section', { id: 'list' }, h('div', { class: 'toolbar' }, search,
    h('select', { id: 'filter', onchange: (e) => go({ run: runIdx, q: st.q, f: e.target.value }) },
      h('option', { value: '' }, 'all'), values.map((v) => h('option', { value: v, selected: v === st.f }, v)))),
  pager, table);
}

function flips(both, byTask, na, nb) {
  // Which tasks each run gets right: the change a researcher looks for first.
  const ok = (r) => r.verdict === 'correct' || r.correct === 1 || r.correct === true;
  const n = { both: 0, [na + ' only']: 0, [nb + ' only']: 0, neither: 0 };
  for (const r of both) {
    const x = ok(r), y = ok(byTask.get(r.task_id || r.id));
    n[x && y ? 'both' : x ? na + ' only' : y ? nb + ' only' : 'neither'] += 1;
  }
  return h('div', { class: 'cards', id: 'flips' }, Object.entries(n).map(([k, v]) =>
    h('div', { class: 'card' }, h('div', { class: 'label' }, 'correct in ' + k), h('div', { class: 'value' }, v))));
}

function renderCompareRuns(a, b) {
  const ra = V.index.runs[a], rb = V.index.runs[b];
  const byTask = new Map(rb.rows.map((r) => [r.task_id || r.id, r]));
  const pick = (k, other) => h('select', { onchange: (e) => go({ compare: k === 0 ? e.target.value + ',' + other : other + ',' + e.target.value }) },
    V.index.runs.map((r, j) => h('option', { value: j, selected: j === (k === 0 ? a : b) }, r.id)));
  const both = ra.rows.filter((r) => byTask.has(r.task_id || r.id));
  return h('section', { id: 'compare-runs' }, h('h2', {}, 'Compare runs ', pick(0, b), ' vs ', pick(1, a)),
    h('p', { class: 'muted' }, `${both.length} tasks in both; click one to see the two trajectories side by side`),
    flips(both, byTask, ra.id, rb.id),
    h('table', {}, h('tr', {}, ['task', 'question', ra.id, rb.id].map((x) => h('th', {}, x))),
      both.slice(0, 500).map((r) => { const o = byTask.get(r.task_id || r.id); return h('tr', { class: 'row',
        onclick: () => go({ run: a, t: r.i, vs: b + ':' + o.i }) }, h('td', {}, r.task_id), h('td', {}, short(r.question, 120)),
      h('td', { class: 'verdict-' + r.verdict }, r.verdict || fmt(r.reward) || r.status),
      h('td', { class: 'verdict-' + o.verdict }, o.verdict || fmt(o.reward) || o.status)); })));
}

// Encrypted benchmarks: rows and details sealed with the canary (BrowseComp's
// scheme: XOR with SHA-256(canary) repeated), opened in this tab's memory only.
async function opener(canary) {
  const key = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canary)));
  const dec = new TextDecoder('utf-8', { fatal: true });
  return (b64) => {
    const bin = atob(b64), out = new Uint8Array(bin.length);
    for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k) ^ key[k % key.length];
    return JSON.parse(dec.decode(out));
  };
}

async function unseal(canary) {
  const open = await opener(canary);
  const rows = V.index.runs.map((r) => r.rows.map((x) => (x.sealed ? { ...open(x.sealed), i: x.i } : x)));
  V.open = open;
  V.index.runs.forEach((r, k) => { r.rows = rows[k]; });
}

function canaryForm() {
  if (V.open || !V.index.runs.some((r) => r.sealed)) return null;
  const msg = h('span', { id: 'canary-msg', class: 'why' }, 'this page holds encrypted benchmark text; it is decrypted in this tab only');
  const input = h('input', { id: 'canary', type: 'password', placeholder: 'canary' });
  const submit = async (e) => {
    e.preventDefault();
    try { await unseal(input.value); await render(); } catch (err) { msg.textContent = 'the canary does not decrypt this page'; }
  };
  return h('form', { class: 'panel toolbar', id: 'canary-form', onsubmit: submit }, input, h('button', { id: 'unseal' }, 'decrypt'), msg);
}

async function render() {
  const st = parseHash();
  const main = document.querySelector('main');
  try {
    if (st.compare !== undefined) {
      const [a, b] = st.compare.split(',').map(Number);
      renderHeader({ run: a });
      main.replaceChildren(renderCompareRuns(a, b));
      return;
    }
    const run = Math.min(+(st.run || 0), V.index.runs.length - 1);
    renderHeader({ run });
    if (st.t === undefined) {
      main.replaceChildren(h('h2', {}, V.index.runs[run].id), canaryForm() || '', renderSummary(V.index.runs[run]), renderList(run, st));
    } else {
      main.replaceChildren(h('p', { class: 'muted' }, 'loading…'));
      main.replaceChildren(await renderItem(run, +st.t, st));
    }
  } catch (e) {
    main.replaceChildren(h('pre', { class: 'panel', id: 'error' }, String(e.stack || e)));
    throw e;
  }
}

function onKey(e) {
  // j / k: next / previous item, u: back to the list (not while typing).
  if (e.target.closest && e.target.closest('input, select, textarea')) return;
  const st = parseHash();
  if (st.t === undefined || st.compare !== undefined) return;
  const run = +(st.run || 0), t = +st.t, n = V.index.runs[run].n;
  if (e.key === 'j' && t + 1 < n) go({ run, t: t + 1 });
  else if (e.key === 'k' && t > 0) go({ run, t: t - 1 });
  else if (e.key === 'u') go({ run });
}

async function start() {
  V.index = await loadIndex();
  window.addEventListener('hashchange', () => render().catch(() => {}));
  document.addEventListener('keydown', onKey);
  await render();
  window.__viewerReady = performance.now();
}
start();  // the index and <main> are above this script
