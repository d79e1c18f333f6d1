"""The project's statistics: Wilson intervals and paired tests over tasks.

One implementation each, used by eval's pass@1 (evaluation/metrics.py),
run comparison (evaluation/comparison.py), the pipeline report
(pipeline/report.py) and the live snippet judge (search/live.py).
"""

import math
import random
from typing import Mapping


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
  """The Wilson score interval of k successes in n trials (95% at z 1.96);
  (0, 1) when n is 0."""
  if n <= 0:
    return 0.0, 1.0
  p = k / n
  denom = 1 + z * z / n
  center = (p + z * z / (2 * n)) / denom
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
  return max(0.0, center - half), min(1.0, center + half)


def pass_at_1(correct: Mapping[str, bool]) -> dict:
  """{n, k, value, ci_low, ci_high} of per-task outcomes."""
  n, k = len(correct), sum(bool(v) for v in correct.values())
  lo, hi = wilson(k, n)
  return {
      'n': n,
      'k': k,
      'value': k / n if n else 0.0,
      'ci_low': lo,
      'ci_high': hi,
      'ci_method': 'wilson 95%',
  }


def mcnemar_p(only_a: int, only_b: int) -> float:
  """Exact two-sided McNemar p from the discordant counts.

  The two-sided binomial test of `only_a` successes in `only_a + only_b`
  trials at p = 0.5; 1.0 when no pair is discordant.
  """
  m = only_a + only_b
  if not m:
    return 1.0
  tail = sum(math.comb(m, i) for i in range(min(only_a, only_b) + 1)) / 2**m
  return min(1.0, 2 * tail)


def mcnemar(before: Mapping[str, bool], after: Mapping[str, bool]) -> dict:
  """Exact two-sided McNemar test on the tasks both runs graded."""
  common = sorted(set(before) & set(after))
  gained = sum(1 for t in common if after[t] and not before[t])
  lost = sum(1 for t in common if before[t] and not after[t])
  delta = (gained - lost) / len(common) if common else 0.0
  return {
      'tasks': len(common),
      'gained': gained,
      'lost': lost,
      'delta': delta,
      'p_value': mcnemar_p(gained, lost),
      'test': 'exact McNemar (two-sided binomial on discordant tasks)',
  }


def paired_bootstrap(
    before: Mapping[str, bool],
    after: Mapping[str, bool],
    samples: int = 2000,
    seed: int = 0,
) -> dict:
  """95% interval of the pass@1 difference, resampling tasks."""
  common = sorted(set(before) & set(after))
  if not common:
    return {'tasks': 0, 'low': 0.0, 'high': 0.0}
  diffs = [int(after[t]) - int(before[t]) for t in common]
  rng = random.Random(seed)
  means = sorted(
      sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(samples)
  )
  return {
      'tasks': len(common),
      'low': means[int(0.025 * samples)],
      'high': means[int(0.975 * samples) - 1],
  }
