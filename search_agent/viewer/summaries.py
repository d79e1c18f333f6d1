"""A run's summary: headline figures, distributions, tables and raw JSON.

The shape the page renders: `{'cards': [{label, value, note}], 'bars':
[{title, counts}], 'tables': [{title, head, rows}], 'charts': [{title,
points}], 'json': {name: object}}`. Eval numbers come from the run's own
report.json when it has one (else from evaluation.metrics over its
results), so the viewer shows exactly what the eval reported.
"""

import collections
from typing import Any, Sequence

from search_agent.evaluation import metrics as metrics_lib

Json = dict[str, Any]


def _pct(x: float | None) -> str:
  return '—' if x is None else f'{100 * x:.1f}%'


def _interval(ci: Json | None) -> str:
  if not isinstance(ci, dict) or 'low' not in ci:
    return ''
  return (
      f'95% {ci.get("method", "wilson")} interval {_pct(ci["low"])} –'
      f' {_pct(ci["high"])}'
  )


def _pass_cards(s: Json) -> list[Json]:
  """pass@1 over graded answers and strict (failures as wrong), headline first."""
  graded = {
      'label': 'pass@1',
      'value': f'{_pct(s["pass_at_1"])} ({s.get("correct")}/{s.get("graded")})',
      'note': _interval(s.get('ci')),
  }
  strict = {
      'label': 'pass@1 strict (judge errors, failed runs as wrong)',
      'value': _pct(s.get('pass_at_1_strict')),
      'note': _interval(s.get('ci_strict')),
  }
  cards = [graded, strict]
  if s.get('headline') == 'pass_at_1_strict':  # the eval's own headline first
    cards = [{**strict, 'label': strict['label'] + ' · headline'}, graded]
  rep = s.get('repeats') or {}
  if rep.get('n', 1) > 1:
    cards.append({'label': f'avg@{rep["n"]} / pass@{rep["n"]}',
                  'value': f'{_pct(rep.get("avg_at_n"))} / {_pct(rep.get("pass_at_n"))}'})  # fmt: skip
  fail = s.get('failures') or {}
  if fail:
    cards.append({'label': 'failed rollouts', 'value': f'{fail.get("failed", 0)} / {fail.get("rollouts", "?")}',
                  'note': ', '.join(f'{k}: {v}' for k, v in (fail.get('kinds') or {}).items())})  # fmt: skip
  return cards


def _eval(s: Json, manifest: Json | None) -> tuple[list[Json], list[Json]]:
  tools, ctx = s.get('tools', {}), s.get('context', {})
  cards = _pass_cards(s) + [
      {
          'label': 'questions / graded / judge errors',
          'value': f'{s["questions"]} / {s["graded"]} / {s["judge_errors"]}',
      },
      {
          'label': 'tool calls per question',
          'value': f'{tools.get("calls_mean", 0):.2f} mean, {tools.get("calls_median", 0)} median, {tools.get("calls_max", 0)} max',
      },
      {'label': 'invalid turns', 'value': str(tools.get('invalid_turns', 0))},
      {
          'label': 'context resets',
          'value': str(ctx.get('resets', 0)),
          'note': f'peak prompt tokens mean {ctx.get("peak_prompt_tokens_mean") or 0:.0f}, max {ctx.get("peak_prompt_tokens_max")}',
      },
      {
          'label': 'blocked URLs in tool traffic',
          'value': str(s.get('leakage_flagged', 0)),
      },
  ]
  cp = (manifest or {}).get('context_policy')
  if cp:
    cards.append(
        {
            'label': 'context policy',
            'value': cp.get('policy', ''),
            'note': ', '.join(
                f'{k}={v}' for k, v in cp.items() if k != 'policy'
            ),
        }
    )
  bars = [
      {'title': 'tool calls by tool', 'counts': tools.get('calls_by_tool', {})},
      {'title': 'statuses', 'counts': s.get('statuses', {})},
      {'title': 'budgets hit', 'counts': s.get('budgets_hit', {})},
  ]
  return cards, bars


def _synthesis_funnel(funnel: Any) -> Json | None:
  """synthesis.run's funnel.json: {'funnel': {'stages': [{stage, count}]}}."""
  f = funnel.get('funnel', funnel) if isinstance(funnel, dict) else None
  stages = f.get('stages') if isinstance(f, dict) else None
  if not isinstance(stages, list) or not all(
      isinstance(x, dict) for x in stages
  ):
    return None
  keys = [k for k in stages[0] if k != 'stage'] if stages else []
  return {
      'title': 'synthesis funnel',
      'head': ['stage', *keys],
      'rows': [
          [x.get('stage', ''), *(x.get(k, '') for k in keys)] for x in stages
      ],
  }


def _funnel_table(report: Json) -> Json | None:
  stages = report.get('stages') if isinstance(report, dict) else None
  if not isinstance(stages, list):
    return None
  rows = [
      [
          st.get('name', ''),
          st.get('in', ''),
          st.get('kept', ''),
          st.get('removed', ''),
          st.get('errors', ''),
          ', '.join(f'{k}: {v}' for k, v in (st.get('reasons') or {}).items()),
      ]
      for st in stages
      if isinstance(st, dict)
  ]
  return {
      'title': 'filter funnel',
      'head': ['stage', 'in', 'kept', 'removed', 'errors', 'reasons'],
      'rows': rows,
  }


_NOT_CHARTED = ('time', 'timestamp', 'wall_time')


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
  # Rewards and the loss first, then the rest by name; wall-clock stamps off.
  first = lambda k: (0 if 'reward' in k else 1 if 'loss' in k else 2, k)
  keys = sorted((k for k in series if k not in _NOT_CHARTED), key=first)
  return [{'title': k, 'points': series[k]} for k in keys][:32]


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
  return [
      {
          'label': 'context policies',
          'value': ', '.join(f'{k} ({v})' for k, v in policies.items()),
          'note': 'resets: '
          + (', '.join(f'{k} {v}' for k, v in events.items()) or 'none'),
      }
  ]


def _version_bars(rewards: dict[str, Json]) -> list[Json]:
  """Trained tokens per policy version over the run's scored rollouts."""
  counts = collections.Counter()
  for r in rewards.values():
    counts.update({int(k): n for k, n in (r.get('versions') or {}).items()})
  if not counts:
    return []
  return [
      {
          'title': 'trained tokens by policy version',
          'counts': {f'v{k}': n for k, n in sorted(counts.items())},
      }
  ]


def build(
    *, rows, report, manifest, funnel, results, metrics, trajs, rewards=None
) -> Json:
  """The summary of one run (see the module docstring for its shape)."""
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
  bars += _version_bars(rewards or {})
  for table in (_funnel_table(report), _synthesis_funnel(funnel)):
    if table:
      tables.append(table)
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
  return {
      'cards': cards,
      'bars': [b for b in bars if b['counts']],
      'tables': tables,
      'charts': _charts(metrics),
      'json': raw,
  }
