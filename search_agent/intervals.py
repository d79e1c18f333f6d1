"""The Wilson score interval of a proportion: one implementation for eval's
pass@1, the pipeline report and the live snippet judge."""

import math


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
