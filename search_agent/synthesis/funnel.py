"""The funnel report (open recipe, Figure 9): JSON, Markdown and a plot.

Stages per proposal: generated → controller pass → critic excellent →
solver attempted → accepted (and too easy / hard candidates beside), with
the reasons proposals went back; per evidence graph: the share that
yielded a task. The seed's initial run is quoted for comparison.
"""

import collections
import statistics
from typing import Any, Iterable

SEED_GRAPH_TO_QA = 0.912  # 13,321 of 14,611 evidence graphs
SEED_PER_PROPOSAL = 0.019  # of 695,056 proposals
SEED_SOLVER_CALLS = {'median': 76, 'mean': 91}


def _rate(n: int, d: int) -> float:
  return round(n / d, 4) if d else 0.0


def funnel(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
  """Counts from journal records (one per evidence graph)."""
  records = list(records)
  decisions = collections.Counter()
  stages = collections.Counter()
  calls = []
  reviewed = 0
  for rec in records:
    for e in rec['decisions']:
      decisions[e['decision']] += 1
      stages['proposals'] += 1
      if not e['controller']['passed']:
        continue
      stages['controller_pass'] += 1
      reviewed += isinstance(e.get('critic'), dict)
      if e['decision'] in ('returned:critic', 'returned:critic_error'):
        continue
      stages['critic_excellent'] += 1
      if isinstance(e.get('solver'), dict):
        stages['solver_attempts'] += 1
      if e['decision'] == 'accepted':
        stages['accepted'] += 1
        if isinstance(e.get('solver'), dict):
          calls.append(e['solver']['calls'])
  n = stages['proposals']
  graphs = len(records)
  with_qa = sum(1 for r in records if r['accepted'])
  order = ('proposals', 'controller_pass', 'critic_excellent',
           'solver_attempts', 'accepted')  # fmt: skip
  out = {
      'stages': [
          {'stage': s, 'count': stages[s], 'of_proposals': _rate(stages[s], n)}
          for s in order
      ],
      'decisions': dict(sorted(decisions.items())),
      'role_errors': {
          k: v
          for k, v in sorted(decisions.items())
          if k.endswith('_error') or k == 'returned:generator:llm_error'
      },
      'too_easy': decisions['too_easy'],
      'hard_candidates': decisions['hard_candidate'],
      'per_proposal_acceptance': _rate(stages['accepted'], n),
      'evidence_graphs': graphs,
      'graphs_with_qa': with_qa,
      'graph_to_qa': _rate(with_qa, graphs),
      'seed': {
          'graph_to_qa': SEED_GRAPH_TO_QA,
          'per_proposal_acceptance': SEED_PER_PROPOSAL,
          'accepted_solver_calls': SEED_SOLVER_CALLS,
      },
      'accepted_solver_calls': _calls(calls),
      'skipped_stages': [
          name
          for name, ran in (
              ('critic_excellent', reviewed),
              ('solver_attempts', stages['solver_attempts']),
          )
          if not ran
      ],
  }
  return out


def _calls(calls: list[int]) -> dict[str, Any]:
  if not calls:
    return {'n': 0, 'note': 'no accepted task has a solver attempt'}
  hist = collections.Counter(min(c // 25 * 25, 200) for c in calls)
  return {
      'n': len(calls),
      'median': statistics.median(calls),
      'mean': round(statistics.fmean(calls), 2),
      'min': min(calls),
      'max': max(calls),
      'histogram_bin25': {str(k): v for k, v in sorted(hist.items())},
  }


def markdown(report: dict[str, Any]) -> str:
  """The report as a Markdown page."""
  f = report['funnel']
  lines = ['# Task synthesis funnel', '', '| stage | count | of proposals |',
           '|---|---:|---:|']  # fmt: skip
  for s in f['stages']:
    name = s['stage']
    if name in f['skipped_stages']:
      name += ' (not run: no proposal got here, or the role is off)'
    lines.append(f'| {name} | {s["count"]:,} | {s["of_proposals"]:.1%} |')
  lines += [
      '',
      f'- too easy: {f["too_easy"]:,}; hard candidates:'
      f' {f["hard_candidates"]:,}',
      f'- per proposal acceptance: {f["per_proposal_acceptance"]:.1%}'
      f' (seed {f["seed"]["per_proposal_acceptance"]:.1%})',
      f'- graph-to-QA: {f["graphs_with_qa"]:,} of {f["evidence_graphs"]:,}'
      f' evidence graphs, {f["graph_to_qa"]:.1%} (seed'
      f' {f["seed"]["graph_to_qa"]:.1%})',
      f'- accepted solver calls: {f["accepted_solver_calls"]}',
      '',
      '## Decisions',
      '',
      '| decision | proposals |',
      '|---|---:|',
  ]
  lines += [f'| {k} | {v:,} |' for k, v in f['decisions'].items()]
  lines += _roles_markdown(report)
  for name in ('anchor_graphs', 'evidence_graphs', 'tasks'):
    lines += ['', f'## {name.replace("_", " ").capitalize()}', '']
    for k, v in report.get(name, {}).items():
      lines.append(f'- {k}: {v}')
  return '\n'.join(lines) + '\n'


_ROLE_COLUMNS = (
    'calls', 'failed_calls', 'parse_failures', 'parse_retries',
    'parse_errors', 'length_finishes', 'http_retries', 'cache_hits',
)  # fmt: skip


def _roles_markdown(report: dict[str, Any]) -> list[str]:
  """The LLM roles' counters and the role check, as Markdown lines."""
  roles = report.get('roles') or {}
  if not roles:
    return []
  lines = ['', '## LLM roles', '',
           '| role | model | ' + ' | '.join(_ROLE_COLUMNS) + ' |',
           '|---|---|' + '---:|' * len(_ROLE_COLUMNS)]  # fmt: skip
  for name, r in roles.items():
    cells = ' | '.join(str(r.get(k, '')) for k in _ROLE_COLUMNS)
    lines.append(f'| {name} | {r.get("model", "")} | {cells} |')
  probes = (report.get('role_check') or {}).get('probes') or {}
  if probes:
    lines += ['', '## Role check (one probe per role; decides nothing)', '',
              '| stage | outcome |', '|---|---|']  # fmt: skip
    lines += [f'| {k} | {v["outcome"]} |' for k, v in probes.items()]
  return lines


def plot(report: dict[str, Any], path: str) -> None:
  """A horizontal bar chart of the stages (Figure 9's shape)."""
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use('Agg')
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  f = report['funnel']
  rows = [
      (s['stage'].replace('_', ' ')
       + (' (not run)' if s['stage'] in f['skipped_stages'] else ''),
       s['count'], '#9aa5b1' if s['stage'] in f['skipped_stages'] else '#4c72b0')
      for s in f['stages']
  ]  # fmt: skip
  rows += [('too easy', f['too_easy'], '#dd8452'),
           ('hard candidates', f['hard_candidates'], '#c44e52')]  # fmt: skip
  total = f['stages'][0]['count'] or 1
  rows = rows[::-1]
  fig, ax = plt.subplots(figsize=(7.5, 3.6))
  bars = ax.barh([r[0] for r in rows], [r[1] for r in rows],
                 color=[r[2] for r in rows])  # fmt: skip
  for bar, (_, count, _) in zip(bars, rows):
    ax.text(
        bar.get_width(), bar.get_y() + bar.get_height() / 2,
        f' {count:,} ({count / total:.1%})', va='center', fontsize=8,
    )  # fmt: skip
  ax.set_xlabel('proposals')
  ax.set_title(
      'Proposal filtering (percent of generated proposals); graph-to-QA'
      f' {f["graph_to_qa"]:.1%}',
      fontsize=10,
  )
  ax.set_xlim(0, max([r[1] for r in rows] + [1]) * 1.35)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
