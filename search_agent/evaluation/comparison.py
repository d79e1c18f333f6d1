"""Compares two eval runs (e.g. CM on vs off): a table and a plot.

The table lists each run's pass@1 (strict: a judge failure counts wrong)
with its Wilson interval, the judge-error-excluded pass@1, grading counts,
tool use, statuses, budgets hit, calibration error and the harness settings
that differ (mode, context policy, limits, judge). On the questions graded in
both runs it adds the paired outcome counts and the exact McNemar test
(two-sided binomial test of the discordant pairs, p = 0.5), and says how
many questions were paired. It warns (in the table, compare.json and on
stderr) when the runs share no or few (< half the smaller run's) graded
questions, or when their grader identities (benchmark grader, template
hash, judge model) differ.
"""

import json
import pathlib
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use('Agg')
# pylint: disable=g-import-not-at-top
import matplotlib.pyplot as plt

from search_agent import stats
from search_agent.evaluation import report as report_lib
from search_agent.evaluation import results

# pylint: enable=g-import-not-at-top


def load_run(workdir: str | pathlib.Path) -> dict[str, Any]:
  """A run's report and its latest result per question."""
  report = report_lib.load(workdir)
  latest = results.read_records(pathlib.Path(workdir) / results.RESULTS)
  by_task = {r['task_id']: r for r in latest.values()}
  return {'report': report, 'records': by_task}


def paired(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
  """Outcome counts on questions graded in both runs, and McNemar's p."""
  common = [
      t
      for t in sorted(set(a) & set(b))
      if a[t].get('correct') is not None and b[t].get('correct') is not None
  ]
  both = sum(a[t]['correct'] and b[t]['correct'] for t in common)
  only_a = sum(a[t]['correct'] and not b[t]['correct'] for t in common)
  only_b = sum(b[t]['correct'] and not a[t]['correct'] for t in common)
  discordant = only_a + only_b
  return {
      'questions': len(common),
      'both_correct': both,
      'only_a': only_a,
      'only_b': only_b,
      'neither': len(common) - both - discordant,
      'mcnemar_p': stats.mcnemar_p(only_a, only_b),
  }


def _pct(x):
  return '—' if x is None else f'{100 * x:.1f}%'


def _row(name, a, b, fmt=str, delta=False) -> str:
  d = ''
  if delta and a is not None and b is not None:
    d = f'{100 * (b - a):+.1f} pp' if fmt is _pct else f'{b - a:+.2f}'
  return f'| {name} | {fmt(a)} | {fmt(b)} | {d} |'


def table(runs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
  """The comparison as a markdown table."""
  (sa, ma), (sb, mb) = [
      (r['report']['summary'], r['report']['manifest']) for r in runs
  ]

  def ci(s):
    c = s.get('ci_strict', s['ci'])
    return f'{_pct(c["low"])} – {_pct(c["high"])}'

  lines = [
      f'| metric | {names[0]} | {names[1]} | Δ (B − A) |',
      '|---|---|---|---|',
      _row('pass@1', _strict(sa), _strict(sb), _pct, True),
      _row('95% CI (Wilson)', ci(sa), ci(sb)),
      _row('pass@1, judge errors excluded', sa['pass_at_1'], sb['pass_at_1'],
           _pct, True),
      _row('graded / questions', f'{sa["graded"]}/{sa["questions"]}',
           f'{sb["graded"]}/{sb["questions"]}'),
      _row('judge errors', sa['judge_errors'], sb['judge_errors']),
      _row('tool calls / question', sa['tools']['calls_mean'],
           sb['tools']['calls_mean'], lambda x: f'{x:.2f}', True),
      _row('steps / question', sa['tools']['steps_mean'],
           sb['tools']['steps_mean'], lambda x: f'{x:.2f}', True),
      _row('invalid turns', sa['tools']['invalid_turns'],
           sb['tools']['invalid_turns']),
      _row('statuses', sa['statuses'], sb['statuses']),
      _row('budgets hit', sa['budgets_hit'], sb['budgets_hit']),
      _row('peak prompt tokens (mean)',
           sa['context']['peak_prompt_tokens_mean'],
           sb['context']['peak_prompt_tokens_mean'],
           lambda x: '—' if x is None else f'{x:.0f}', True),
      _row('context resets', sa['context']['resets'],
           sb['context']['resets']),
      _row('calibration error', sa['calibration']['ece'],
           sb['calibration']['ece'], _pct, True),
      _row('mode', ma['mode'], mb['mode']),
      _row('context policy', ma['context_policy']['policy'],
           mb['context_policy']['policy']),
      _row('limits', _limits(ma), _limits(mb)),
      _row('judge', ma['judge']['method'], mb['judge']['method']),
  ]  # fmt: skip
  p = paired(runs[0]['records'], runs[1]['records'])
  lines += ['']
  lines += [f'WARNING: {w}' for w in warnings(runs, p)]
  lines += [
      f'Paired on {p["questions"]} questions graded in both: both correct'
      f' {p["both_correct"]}, only {names[0]} {p["only_a"]}, only'
      f' {names[1]} {p["only_b"]}, neither {p["neither"]}; exact McNemar'
      f' p = {p["mcnemar_p"]:.3g}.',
  ]
  return '\n'.join(lines) + '\n'


def _strict(s: Mapping[str, Any]) -> float | None:
  return s.get('pass_at_1_strict', s['pass_at_1'])


def warnings(
    runs: Sequence[Mapping[str, Any]], p: Mapping[str, Any]
) -> list[str]:
  """What makes the two runs hard to compare: few shared questions, or
  answers graded differently."""
  out = []
  sizes = [len(r['records']) for r in runs]
  if p['questions'] == 0:
    out.append(
        f'the runs share no graded question ({sizes[0]} and {sizes[1]}'
        ' questions): the paired test is empty'
    )
  elif p['questions'] < 0.5 * min(sizes):
    out.append(
        f'only {p["questions"]} questions are graded in both runs (of'
        f' {sizes[0]} and {sizes[1]}): the pass@1 figures are over different'
        ' questions'
    )
  graders = [r['report']['manifest']['judge'].get('identity') for r in runs]
  if graders[0] != graders[1]:
    out.append(f'graded differently: {graders[0]} vs {graders[1]}')
  return out


def _limits(m: Mapping[str, Any]) -> str:
  lim = m['limits']
  return (
      f'{lim["max_steps"]} steps, {lim["max_output_tokens"]} out,'
      f' {lim["context_limit"]} ctx'
  )


def plot(
    runs: Sequence[Mapping[str, Any]], names: Sequence[str], path: pathlib.Path
) -> None:
  """pass@1 with Wilson intervals, and tool calls per question."""
  summaries = [r['report']['summary'] for r in runs]
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.5))
  p = [100 * (s['pass_at_1'] or 0.0) for s in summaries]
  err = [
      [pi - 100 * s['ci']['low'] for pi, s in zip(p, summaries)],
      [100 * s['ci']['high'] - pi for pi, s in zip(p, summaries)],
  ]
  ax1.bar(names, p, yerr=err, capsize=6, color=['#4878d0', '#ee854a'])
  ax1.set_ylabel('pass@1 (%) with 95% Wilson CI')
  ax1.set_ylim(0, 100)
  ax2.bar(
      names,
      [s['tools']['calls_mean'] for s in summaries],
      color=['#4878d0', '#ee854a'],
  )
  ax2.set_ylabel('tool calls per question (mean)')
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def compare(
    workdirs: Sequence[str], names: Sequence[str], out: pathlib.Path
) -> dict[str, Any]:
  """Writes compare.md, compare.json and compare.png into `out`."""
  if len(workdirs) != 2 or len(names) != 2:
    raise ValueError('compare takes exactly two runs and two names')
  out.mkdir(parents=True, exist_ok=True)
  runs = [load_run(w) for w in workdirs]
  md = table(runs, names)
  (out / 'compare.md').write_text(md)
  summary = {
      'runs': dict(zip(names, workdirs)),
      'pass_at_1': {
          n: r['report']['summary']['pass_at_1'] for n, r in zip(names, runs)
      },
      'pass_at_1_strict': {
          n: _strict(r['report']['summary']) for n, r in zip(names, runs)
      },
      'paired': paired(runs[0]['records'], runs[1]['records']),
  }
  summary['warnings'] = warnings(runs, summary['paired'])
  (out / 'compare.json').write_text(json.dumps(summary, indent=2))
  plot(runs, names, out / 'compare.png')
  return summary
