"""Eval metrics as pure functions over per-question result records.

* Headline (`headline` names it): `pass_at_1_strict` = correct / rollouts,
  a judge failure (after retries) counting wrong, as the benchmarks' own
  scripts score it; `ci_strict` is its interval. `pass_at_1` keeps its old
  meaning, correct / graded (judge errors left out of the denominator and
  counted in `judge_errors`), with `ci`: the secondary figure.
* Repeats (`repeats.n` rollouts per question): avg@N = the mean over all
  rollouts (= pass_at_1_strict), pass@N = share of questions with at least
  one correct rollout, and the strict pass@1 of each repeat.
* Confidence interval: Wilson score interval at level `z` (1.96 ~ 95%):
  (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
* Calibration, two labelled figures over graded answers with a confidence:
  `calibration.ece`: 10 equal-width bins, ECE = Σ_b (n_b/n)·|acc_b − conf_b|
  (L1); `calibration_rms.error`: HLE's and BrowseComp-Plus's `calib_err`
  (p=2, beta=100): answers sorted by confidence, cut into bins of 100 (the
  last takes the rest), sqrt(Σ_b (n_b/n)·(conf_b − acc_b)²), None under 100
  answers. As in their code the loop stops before the last bin, so that bin
  is never counted (with 100-199 answers the error is 0); kept, so that the
  figure equals theirs.
* Tool use: calls per question (mean, median, max), calls per tool, invalid
  turns, statuses and budgets hit. Context: peak prompt tokens per question
  (as counted for the context limit) and the number of context resets.
"""

import collections
import statistics
from typing import Any, Sequence

import numpy as np

from search_agent import stats
from search_agent.evaluation import evidence

Record = dict[str, Any]


wilson_interval = stats.wilson


def calibration(records: Sequence[Record], bins: int = 10) -> dict[str, Any]:
  """Expected calibration error and the per-bin table."""
  pairs = [
      (r['confidence'] / 100.0, bool(r['correct']))
      for r in records
      if r.get('correct') is not None and r.get('confidence') is not None
  ]
  grouped: dict[int, list[tuple[float, bool]]] = collections.defaultdict(list)
  for c, y in pairs:
    grouped[min(int(c * bins), bins - 1)].append((c, y))
  table = []
  ece = 0.0
  for b in sorted(grouped):
    inside = grouped[b]
    conf = sum(c for c, _ in inside) / len(inside)
    acc = sum(y for _, y in inside) / len(inside)
    ece += len(inside) / len(pairs) * abs(acc - conf)
    table.append(
        {
            'bin': [b / bins, (b + 1) / bins],
            'n': len(inside),
            'confidence': conf,
            'accuracy': acc,
        }
    )
  return {
      'ece': ece if pairs else None,
      'n': len(pairs),
      'bins': table,
      'method': f'L1 ECE over {bins} equal-width confidence bins',
  }


def calib_err_rms(
    confidences: Sequence[float], correct: Sequence[bool], beta: int = 100
) -> float | None:
  """HLE / BrowseComp-Plus calibration error (fraction); None if < beta."""
  if len(confidences) < beta:
    return None
  conf = np.asarray(confidences, dtype=float)
  corr = np.asarray(correct, dtype=float)
  idxs = np.argsort(conf)  # their sort (numpy's default), for equal ties
  conf, corr = conf[idxs], corr[idxs]
  bins = [[i * beta, (i + 1) * beta] for i in range(len(conf) // beta)]
  bins[-1] = [bins[-1][0], len(conf)]
  total = 0.0
  for lo, hi in bins[:-1]:  # sic: the last bin is not counted
    total += (
        (hi - lo) / len(conf) * (conf[lo:hi].mean() - corr[lo:hi].mean()) ** 2
    )
  return float(np.sqrt(total))


def calibration_rms(records: Sequence[Record], beta: int = 100):
  """The `calibration_rms` entry of the summary."""
  pairs = [
      (r['confidence'] / 100.0, bool(r['correct']))
      for r in records
      if r.get('correct') is not None and r.get('confidence') is not None
  ]
  return {
      'error': calib_err_rms(
          [c for c, _ in pairs], [y for _, y in pairs], beta
      ),
      'n': len(pairs),
      'bin_size': beta,
      'min_answers': beta,
      'method': 'HLE/BrowseComp-Plus calib_err(p=2, beta=100): RMS over'
      ' confidence-sorted bins of 100',
  }


def repeats(records: Sequence[Record]) -> dict[str, Any]:
  """avg@N, pass@N and the strict pass@1 of each repeat."""
  by_task: dict[str, list[bool]] = collections.defaultdict(list)
  by_repeat: dict[int, list[bool]] = collections.defaultdict(list)
  for i, r in enumerate(records):
    ok = bool(r.get('correct'))
    by_task[_task(r, i)].append(ok)
    by_repeat[repeat_index(r.get('traj_id', ''))].append(ok)
  n = max((len(v) for v in by_task.values()), default=0)
  return {
      'n': n,
      'avg_at_n': (
          sum(map(sum, by_task.values())) / len(records) if records else None
      ),
      'pass_at_n': (
          sum(any(v) for v in by_task.values()) / len(by_task)
          if by_task
          else None
      ),
      'per_repeat': [
          sum(v) / len(v) for _, v in sorted(by_repeat.items()) if v
      ],
  }


def _task(r: Record, i: int) -> str:
  return str(r.get('task_id') or r.get('traj_id') or f'#{i}')


def repeat_index(traj_id: str) -> int:
  """The repeat of a trajectory id '<task id>#<repeat>' (0 without one)."""
  tail = traj_id.rpartition('#')[2]
  return int(tail) if tail.isdigit() else 0


def tool_stats(records: Sequence[Record]) -> dict[str, Any]:
  calls = [r.get('n_tool_calls', 0) for r in records]
  by_tool = collections.Counter()
  for r in records:
    by_tool.update(r.get('tool_calls_by_name', {}))
  return {
      'calls_mean': statistics.fmean(calls) if calls else 0.0,
      'calls_median': statistics.median(calls) if calls else 0.0,
      'calls_max': max(calls, default=0),
      'calls_by_tool': dict(sorted(by_tool.items())),
      'invalid_turns': sum(r.get('invalid_turns', 0) for r in records),
      'steps_mean': (
          statistics.fmean(r.get('steps', 0) for r in records)
          if records
          else 0.0
      ),
  }


def context_stats(records: Sequence[Record]) -> dict[str, Any]:
  """Peak prompt size per question and context resets (discard-all, summary)."""
  peaks = [
      r['peak_prompt_tokens'] for r in records if r.get('peak_prompt_tokens')
  ]
  return {
      'peak_prompt_tokens_mean': statistics.fmean(peaks) if peaks else None,
      'peak_prompt_tokens_max': max(peaks, default=None),
      'resets': sum(r.get('context_resets', 0) for r in records),
  }


def summarize(records: Sequence[Record], z: float = 1.96) -> dict[str, Any]:
  """The report's numbers for one run."""
  graded = [r for r in records if r.get('correct') is not None]
  k = sum(bool(r['correct']) for r in graded)
  n = len(graded)
  statuses = collections.Counter(r.get('status', '') for r in records)
  budgets = collections.Counter(
      b for r in records for b in r.get('budgets_hit', ())
  )
  methods = collections.Counter(r.get('grade_method', '') for r in records)
  lo, hi = wilson_interval(k, n, z)
  slo, shi = wilson_interval(k, len(records), z)
  return {
      'headline': 'pass_at_1_strict',
      'questions': len({_task(r, i) for i, r in enumerate(records)}),
      'rollouts': len(records),
      'graded': n,
      'correct': k,
      'pass_at_1': k / n if n else None,
      'pass_at_1_strict': k / len(records) if records else None,
      'ci': {'method': 'wilson', 'z': z, 'low': lo, 'high': hi},
      'ci_strict': {'method': 'wilson', 'z': z, 'low': slo, 'high': shi},
      'repeats': repeats(records),
      'judge_errors': len(records) - n,
      'leakage_flagged': sum(bool(r.get('leaked_urls')) for r in records),
      'judge_attempts': sum(r.get('judge_attempts', 0) for r in records),
      'grade_methods': dict(sorted(methods.items())),
      'statuses': dict(sorted(statuses.items())),
      'budgets_hit': dict(sorted(budgets.items())),
      'tools': tool_stats(records),
      'context': context_stats(records),
      'calibration': calibration(records),
      'calibration_rms': calibration_rms(records),
      'evidence': evidence.summary(records),
  }
