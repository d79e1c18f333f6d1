"""A run's summary: headline figures, distributions, tables and raw JSON.

The shape the page renders: `{'cards': [{label, value, note}], 'bars':
[{title, counts}], 'tables': [{title, head, rows}], 'charts': [{title,
points}], 'json': {name: object}}`. Eval numbers come from the run's own
report.json when it has one (else from eval.metrics over its results), so
the viewer shows exactly what the eval reported.
"""

import collections
from typing import Any, Sequence

from eval import metrics as metrics_lib

Json = dict[str, Any]


def _pct(x: float | None) -> str:
  return '—' if x is None else f'{100 * x:.1f}%'


def _eval(s: Json, manifest: Json | None) -> tuple[list[Json], list[Json]]:
  ci, tools, ctx = s['ci'], s.get('tools', {}), s.get('context', {})
  cards = [
      {'label': 'pass@1', 'value': f'{_pct(s["pass_at_1"])} ({s["correct"]}/{s["graded"]})',
       'note': f'95% {ci.get("method", "wilson")} interval {_pct(ci["low"])} – {_pct(ci["high"])}'},
      {'label': 'pass@1 (judge errors as wrong)', 'value': _pct(s.get('pass_at_1_strict'))},
      {'label': 'questions / graded / judge errors',
       'value': f'{s["questions"]} / {s["graded"]} / {s["judge_errors"]}'},
      {'label': 'tool calls per question',
       'value': f'{tools.get("calls_mean", 0):.2f} mean, {tools.get("calls_median", 0)} median, {tools.get("calls_max", 0)} max'},
      {'label': 'invalid turns', 'value': str(tools.get('invalid_turns', 0))},
      {'label': 'context resets', 'value': str(ctx.get('resets', 0)),
       'note': f'peak prompt tokens mean {ctx.get("peak_prompt_tokens_mean") or 0:.0f}, max {ctx.get("peak_prompt_tokens_max")}'},
      {'label': 'blocked URLs in tool traffic', 'value': str(s.get('leakage_flagged', 0))},
  ]  # fmt: skip
  cp = (manifest or {}).get('context_policy')
  if cp:
    cards.append({'label': 'context policy', 'value': cp.get('policy', ''),
                  'note': ', '.join(f'{k}={v}' for k, v in cp.items() if k != 'policy')})  # fmt: skip
  bars = [
      {'title': 'tool calls by tool', 'counts': tools.get('calls_by_tool', {})},
      {'title': 'statuses', 'counts': s.get('statuses', {})},
      {'title': 'budgets hit', 'counts': s.get('budgets_hit', {})},
  ]
  return cards, bars


def _funnel_table(report: Json) -> Json | None:
  stages = report.get('stages') if isinstance(report, dict) else None
  if not isinstance(stages, list):
    return None
  rows = [[st.get('name', ''), st.get('in', ''), st.get('kept', ''), st.get('removed', ''),
           st.get('errors', ''), ', '.join(f'{k}: {v}' for k, v in (st.get('reasons') or {}).items())]
          for st in stages if isinstance(st, dict)]  # fmt: skip
  return {
      'title': 'filter funnel',
      'head': ['stage', 'in', 'kept', 'removed', 'errors', 'reasons'],
      'rows': rows,
  }


def _charts(metrics: Sequence[Json]) -> list[Json]:
  series: dict[str, list[list[float]]] = collections.defaultdict(list)
  for k, m in enumerate(metrics):
    x = m.get('step', m.get('update', k))
    for key, v in m.items():
      if (
          key not in ('step', 'update')
          and isinstance(v, (int, float))
          and not isinstance(v, bool)
      ):
        series[key].append([x, v])
  return [{'title': k, 'points': pts} for k, pts in sorted(series.items())][:24]


def _rows_cards(rows: Sequence[Json]) -> tuple[list[Json], list[Json]]:
  cards, bars = [], []
  correct = [
      r['correct'] for r in rows if isinstance(r.get('correct'), (int, float))
  ]
  rewards = [
      r['reward'] for r in rows if isinstance(r.get('reward'), (int, float))
  ]
  if rewards:
    cards.append(
        {
            'label': 'mean reward',
            'value': f'{sum(rewards) / len(rewards):.3f}',
            'note': f'{len(rewards)} scored rollouts',
        }
    )
  if correct:
    k, n = int(sum(1 for c in correct if c)), len(correct)
    lo, hi = metrics_lib.wilson_interval(k, n)
    cards.append(
        {
            'label': 'correct',
            'value': f'{_pct(k / n)} ({k}/{n})',
            'note': f'95% Wilson {_pct(lo)} – {_pct(hi)}',
        }
    )
  for key in ('status', 'verdict', 'outcome', 'reason', 'stage', 'split'):
    counts = collections.Counter(
        str(r[key]) for r in rows if r.get(key) not in (None, '')
    )
    if counts:
      bars.append(
          {'title': f'{key} counts', 'counts': dict(counts.most_common(20))}
      )
  tools = collections.Counter(
      r['tools'] for r in rows if isinstance(r.get('tools'), int)
  )
  if tools:
    bars.append(
        {
            'title': 'tool calls per trajectory',
            'counts': {str(k): v for k, v in sorted(tools.items())},
        }
    )
  return cards, bars


def _context_cards(trajs: dict[str, Json]) -> list[Json]:
  policies = collections.Counter()
  events = collections.Counter()
  for t in trajs.values():
    ctx = (t.get('meta') or {}).get('context') or {}
    if ctx.get('policy'):
      policies[ctx['policy']] += 1
    for ev in ctx.get('events') or ():
      events[ev.get('policy', '?')] += 1
  if not policies:
    return []
  return [{'label': 'context policies', 'value': ', '.join(f'{k} ({v})' for k, v in policies.items()),
           'note': 'resets: ' + (', '.join(f'{k} {v}' for k, v in events.items()) or 'none')}]  # fmt: skip


def build(
    *, rows, report, manifest, funnel, results, decisions, metrics, trajs
) -> Json:
  """The summary of one run (see the module docstring for its shape)."""
  del decisions  # their counts come through the rows
  cards, bars, tables = [], [], []
  s = (report or {}).get('summary') if isinstance(report, dict) else None
  if s is None and results:
    s = metrics_lib.summarize(results)
  if isinstance(s, dict) and 'pass_at_1' in s:
    cards, bars = _eval(s, manifest)
  more_cards, more_bars = _rows_cards(rows)
  cards += [c for c in more_cards if not (s and c['label'] == 'correct')]
  seen = {b['title'] for b in bars}
  bars += [
      b
      for b in more_bars
      if b['title'] not in seen and not (s and b['title'] == 'status counts')
  ]
  cards += _context_cards(trajs)
  funnel_table = _funnel_table(report)
  if funnel_table:
    tables.append(funnel_table)
  raw = {
      k: v
      for k, v in (
          ('manifest', manifest),
          ('funnel', funnel),
          ('report', report),
      )
      if v
  }
  if (
      raw.get('report')
      and manifest
      and raw['report'].get('manifest') == manifest
  ):
    raw['report'] = {k: v for k, v in raw['report'].items() if k != 'manifest'}
  return {'cards': cards, 'bars': [b for b in bars if b['counts']], 'tables': tables,
          'charts': _charts(metrics), 'json': raw}  # fmt: skip
