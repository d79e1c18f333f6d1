"""Eval metrics as pure functions over per-question result records.

* pass@1: correct / graded, one rollout per question. Questions whose grade
  is an error (judge failed after retries) are left out of the denominator
  and counted in `judge_errors`; `pass_at_1_strict` counts them as wrong.
* Confidence interval: Wilson score interval at level `z` (1.96 ~ 95%):
  (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
* Calibration (BrowseComp paper, "calibration error"): stated confidences in
  [0, 100] put into `bins` equal-width bins;
  ECE = Σ_b (n_b/n)·|acc_b − conf_b|
  over graded questions that stated a confidence.
* Tool use: calls per question (mean, median, max), calls per tool, invalid
  turns, statuses and budgets hit. Context: peak prompt tokens per question
  (as counted for the context limit) and the number of context resets.
"""

import collections
import math
import statistics
from typing import Any, Sequence

Record = dict[str, Any]


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
  """Wilson score interval of k successes in n trials."""
  if n == 0:
    return (0.0, 1.0)
  p = k / n
  denom = 1 + z * z / n
  center = (p + z * z / (2 * n)) / denom
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
  return (max(0.0, center - half), min(1.0, center + half))


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
  return {'ece': ece if pairs else None, 'n': len(pairs), 'bins': table}


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
  return {
      'questions': len(records),
      'graded': n,
      'correct': k,
      'pass_at_1': k / n if n else None,
      'pass_at_1_strict': k / len(records) if records else None,
      'ci': {'method': 'wilson', 'z': z, 'low': lo, 'high': hi},
      'judge_errors': len(records) - n,
      'leakage_flagged': sum(bool(r.get('leaked_urls')) for r in records),
      'judge_attempts': sum(r.get('judge_attempts', 0) for r in records),
      'grade_methods': dict(sorted(methods.items())),
      'statuses': dict(sorted(statuses.items())),
      'budgets_hit': dict(sorted(budgets.items())),
      'tools': tool_stats(records),
      'context': context_stats(records),
      'calibration': calibration(records),
  }
