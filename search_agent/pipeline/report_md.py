"""report.json as Markdown: what a first-time reader looks at first."""

import os

from search_agent.pipeline import figures


def _pct(x: float) -> str:
  return f'{100 * x:.1f}%'


_REACH_ROWS = {
    'siblings': 'other questions about their pages',
    'untouched': 'train pages RL never drew',
}


def _reach_row(name: str, sft: dict, rl: dict, paired: dict) -> str:
  b = paired['bootstrap_95']
  return (
      f'| {name} | {sft["n"]} | {_pct(sft["value"])} | {_pct(rl["value"])} |'
      f' {paired["gained"]} / {paired["lost"]} | {paired["p_value"]:.3g} |'
      f' [{_pct(b["low"])}, {_pct(b["high"])}] |'
  )


def _reach_table(rep: dict) -> list[str]:
  """SFT vs RL, paired, from the tasks RL trained on out to held-out ones."""
  reach, seen = rep.get('rl_reach'), rep.get('rl_seen')
  if not (reach and seen):
    return []
  lines = [
      '', "How far RL's gain reaches (greedy pass@1, SFT vs RL on the same"
      ' tasks):', '',
      '| tasks | n | after SFT | after RL | gained / lost | McNemar p |'
      ' bootstrap 95% |', '|---|---|---|---|---|---|---|',
      _reach_row('the questions RL trained on', seen['sft'], seen['rl'],
                 seen['paired']),
  ]  # fmt: skip
  for label, r in reach.items():
    name = _REACH_ROWS.get(label, label)
    lines.append(_reach_row(name, r['sft'], r['rl'], r['paired']))
  held = rep['paired'].get('after_rl_vs_after_sft')
  if held:
    p = rep['pass_at_1']
    lines.append(
        _reach_row('held-out pages', p['after_sft'], p['after_rl'], held)
    )
  return lines


def _pass_row(label: str, r: dict, wf, qn) -> str:
  wf = '-' if wf is None else _pct(wf)
  qn = '-' if qn is None else _pct(qn)
  return (
      f'| {label} | {r["n"]} | {r.get("k", "-")} | {_pct(r["value"])} |'
      f' [{_pct(r["ci_low"])}, {_pct(r["ci_high"])}] | {wf} | {qn} |'
  )


def _pass_table(rep: dict) -> list[str]:
  """Held-out pages, then (when evaluated) held-out phrasings."""
  lines = [
      '| held-out evaluation | n | correct | pass@1 | 95% interval (Wilson)'
      ' | first call well formed | first query names the first page |',
      '|---|---|---|---|---|---|---|',
  ]
  phrased = rep.get('heldout_phrasings')
  pages = ', held-out pages' if phrased else ''
  for label, r in rep['pass_at_1'].items():
    wf = rep['well_formed_first_call'].get(label)
    qn = rep['query_names_first_page'].get(label)
    lines.append(_pass_row(f'{label}{pages}', r, wf, qn))
  for label, r in (phrased or {}).get('pass_at_1', {}).items():
    wf = phrased['well_formed_first_call'].get(label)
    qn = phrased['query_names_first_page'].get(label)
    lines.append(_pass_row(f'{label}, held-out phrasings', r, wf, qn))
  return lines


def _phrasings(rep: dict) -> list[str]:
  """Held-out phrasings: which, each evaluation paired with the same tasks
  as first asked, and whether the answers name the asked relation."""
  phrased = rep.get('heldout_phrasings')
  if not phrased:
    return []
  ids = ', '.join(f'`{p}`' for p in phrased['phrasings']) or 'not recorded'
  lines = [
      '', '## Held-out phrasings', '',
      'The held-out tasks asked again in question frames no training task'
      f' used (synthesis/phrasings.py): {ids}. Each is paired with the same'
      ' task in its trained phrasing:', '',
  ]  # fmt: skip
  for label, p in phrased['vs_pages'].items():
    lines.append(
        f'- {label}: of {p["tasks"]} tasks asked both ways, {p["lost"]} right'
        f' only in the trained phrasing, {p["gained"]} only in the held-out'
        f' one; McNemar p = {p["p_value"]:.3g}'
    )
  for name, p in phrased['paired'].items():
    lines.append(f'- held-out phrasings, {_paired_line(name, p)}')
  for label, named in phrased.get('relation_named', {}).items():
    pages = rep.get('relation_named', {}).get(label)
    if named and pages:
      lines.append(
          f'- {label}: the last reply names the asked relation in'
          f' {_pct(pages["asked"])} of held-out page trajectories and'
          f' {_pct(named["asked"])} of held-out phrasing ones; another'
          f' relation in {_pct(pages["other"])} and {_pct(named["other"])}'
      )
  return lines


def _paired_line(name: str, p: dict) -> str:
  b = p['bootstrap_95']
  return (
      f'{name}: {p["gained"]} tasks gained, {p["lost"]} lost of'
      f' {p["tasks"]}; Δ {_pct(p["delta"])}, McNemar p = {p["p_value"]:.3g},'
      f' bootstrap 95% [{_pct(b["low"])}, {_pct(b["high"])}]'
  )


def _paired(rep: dict) -> list[str]:
  return [f'- {_paired_line(n, p)}' for n, p in rep['paired'].items()]


def _curves(rep: dict) -> list[str]:
  lines = []
  for name in figures.LOSS_CURVES:
    c = rep['curves'].get(name)
    if not c or not c['train']:
      continue
    first, last = c['train'][0], c['train'][-1]
    text = (
        f'- {name}: train NLL {first[1]:.3f} (update {first[0]}) →'
        f' {last[1]:.3f} (update {last[0]})'
    )
    if c['val']:
      text += '; val ' + ', '.join(f'{v:.3f}@{s}' for s, v in c['val'])
    lines.append(text)
  for name in figures.REWARD_CURVES:
    for key, points in sorted((rep['curves'].get(name) or {}).items()):
      lines.append(
          f'- {name} {key}: {points[0][1]:.3f} (update {points[0][0]}) →'
          f' {points[-1][1]:.3f} (update {points[-1][0]})'
      )
  for name, h in sorted((rep.get('rl_horizon') or {}).items()):
    lines.append(
        f'- {name} horizon: {h["trajectories"]} trajectories trained in'
        f' {h["updates"]} updates, {h["slid"]} of them slid (the context'
        f' window dropped observations: trained as'
        f' {h["segments_per_trajectory"]:.2f} segments a trajectory on'
        f' average), {h["dropped_inexact"]} rollouts dropped as inexact'
    )
  if rep.get('rl_pool'):
    m = rep['rl_pool']
    lines.append(
        f'- RL pool: {m["kept"]} train tasks ({m["kept_answered"]} the SFT'
        f' policy answered of {m["probed"]} probed, the rest missed ones)'
    )
  if rep.get('climb'):
    m = rep['climb']
    lines.append(
        f'- climb data: {m["train_selected"]} RL rollouts selected in the'
        f' pass band + {m["train"] - m["train_selected"]} demonstrations'
    )
  return lines or ['- (no training curves recorded)']


def _head(rep: dict, run_dir: str) -> list[str]:
  """What a researcher looks at first: pass@1, its plot, did it learn."""
  lines = [
      f'# Pipeline report ({rep["variant"] or "custom"})',
      '',
      *_pass_table(rep),
      '',
  ]
  plot = rep.get('plots', {}).get('pass_at_1')
  if plot:
    lines += [f'![pass@1]({os.path.relpath(plot, run_dir)})', '']
  verdict = rep.get('verdict')
  if verdict:
    lines += [f'**{verdict["line"]}**', '']
  device = rep.get('device_kind') or 'unrecorded devices'
  why = f' ({rep["variant_reason"]})' if rep.get('variant_reason') else ''
  lines += [
      f'Variant `{rep["variant"] or "custom"}` on {device}{why}. Run'
      f' directory `{rep["run_dir"]}`; {rep["total_seconds"]:.0f} s of stage'
      ' time.',
  ]
  base = rep.get('base')
  if base:
    copy = base['final'].get('copy_nll')
    probe = f'; copy probe {copy:.2f} nats' if copy is not None else ''
    lines += [
        '',
        f'Started from an imported base model (step {base["step"]}, params'
        f' sha256 {str(base["params_sha256"])[:12]}, checked{probe}), made by'
        f' `{base["command"]}`.',
    ]
  paired = _paired(rep)
  if paired:
    lines += ['', *paired]
  return lines


def render(rep: dict, run_dir: str) -> str:
  """The Markdown report: the pass@1 table and plot, the verdict, the rest."""
  lines = [
      *_head(rep, run_dir),
      '',
      '## Curves',
      '',
      *_curves(rep),
      '',
      '## Tool calls per trajectory',
      '',
  ]
  phrased = rep.get('heldout_phrasings', {}).get('tool_calls', {})
  tool_rows = {
      **rep['tool_calls'],
      **{f'{k}, held-out phrasings': v for k, v in phrased.items()},
  }
  for label, t in tool_rows.items():
    if label == 'teacher':
      lines.append(f'- teacher demonstrations: {t}')
    else:
      line = f'- {label}: mean {t["mean"]:.2f}, {t["histogram"]}'
      if t.get('calling'):
        line += f'; trajectories calling each tool {t["calling"]}'
      if t.get('endings'):
        line += f'; ended {t["endings"]}'
      lines.append(line)
  teacher = rep.get('teacher')
  if teacher:
    stand_in = ' (a programmatic stand-in, not an LLM)' if teacher[
        'stand_in'] else ''  # fmt: skip
    lines += ['', f'Teacher: `{teacher["name"]}`{stand_in}.']
  seen = rep.get('rl_seen')
  if seen:
    s, r, p = seen['sft'], seen['rl'], seen['paired']
    b = p['bootstrap_95']
    lines += [
        '', '## RL on its own tasks', '',
        f'Greedy pass@1 on the {s["n"]} tasks RL trained on: after SFT'
        f' {_pct(s["value"])}, after RL {_pct(r["value"])}; {p["gained"]}'
        f' gained, {p["lost"]} lost, McNemar p = {p["p_value"]:.3g},'
        f' bootstrap 95% [{_pct(b["low"])}, {_pct(b["high"])}].',
    ]  # fmt: skip
  lines += _reach_table(rep)
  lines += _phrasings(rep)
  lines += ['', '## Stages', '',
            '| stage | seconds | CPU seconds | key figure | hash |',
            '|---|---|---|---|---|']  # fmt: skip
  for name, m in rep['manifest']['stages'].items():
    reused = ' (reused)' if m['reused'] else ''
    cpu = rep['stage_cpu_seconds'].get(name, 0)
    lines.append(
        f'| {name} | {rep["stages"].get(name, 0):.1f}{reused} | {cpu:.1f} |'
        f' {m["figure"]} | `{m["hash"]}` |'
    )
  lines += ['', '## Plots', '']
  for name, path in rep.get('plots', {}).items():
    if name == 'pass_at_1':
      continue  # at the top
    lines.append(f'![{name}]({os.path.relpath(path, run_dir)})')
  v = rep['manifest']['versions']
  lines += ['', '## Versions', '', ', '.join(f'{k} {x}' for k, x in v.items())]
  lines += ['', 'Every stage\'s command line is in report.json (manifest) and'
            ' stages.json; its output in DIR/<stage>/log.txt.', '']  # fmt: skip
  return '\n'.join(lines)
