"""Statistics of the report: Wilson intervals and paired tests over tasks."""

import math
import random
from typing import Mapping

from search_agent.intervals import wilson


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


def mcnemar(before: Mapping[str, bool], after: Mapping[str, bool]) -> dict:
  """Exact two-sided McNemar test on the tasks both runs graded."""
  common = sorted(set(before) & set(after))
  gained = sum(1 for t in common if after[t] and not before[t])
  lost = sum(1 for t in common if before[t] and not after[t])
  m = gained + lost
  tail = sum(math.comb(m, i) for i in range(min(gained, lost) + 1)) / 2**m
  p = min(1.0, 2 * tail) if m else 1.0
  delta = (gained - lost) / len(common) if common else 0.0
  return {
      'tasks': len(common),
      'gained': gained,
      'lost': lost,
      'delta': delta,
      'p_value': p,
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
