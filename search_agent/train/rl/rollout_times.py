"""Group completion times: a lognormal fitted to the recipe's two quantiles.

Open recipe, "Asynchronous Training": over 1,600 four-rollout groups, the
time from the first rollout's start to completed reward scoring had a median
of 23.6 min and a 99th percentile of 91.7 min. A lognormal with
mu = ln(median) and sigma = (ln p99 - mu) / z_0.99 matches both exactly.
"""

import dataclasses
import math
import statistics

import numpy as np


@dataclasses.dataclass(frozen=True, kw_only=True)
class GroupTimes:
  """The two quantiles the lognormal is fitted to.

  Attributes:
    median_min: Median group time in minutes.
    p99_min: 99th-percentile group time in minutes.
  """

  median_min: float = 23.6
  p99_min: float = 91.7

  def __post_init__(self):
    if not 0 < self.median_min < self.p99_min:
      raise ValueError(
          f'need 0 < median ({self.median_min}) < p99 ({self.p99_min})'
      )


def fit_lognormal(times: GroupTimes) -> tuple[float, float]:
  """(mu, sigma) of the lognormal with the given median and p99."""
  z99 = statistics.NormalDist().inv_cdf(0.99)
  mu = math.log(times.median_min)
  return mu, (math.log(times.p99_min) - mu) / z99


def lognormal_quantile(mu: float, sigma: float, q: float) -> float:
  return math.exp(mu + sigma * statistics.NormalDist().inv_cdf(q))


def quantile_table(
    mu: float, sigma: float, samples: np.ndarray | None = None
) -> dict[str, dict[str, float]]:
  """Fitted (and optionally empirical) quantiles and mean, in minutes."""
  qs = {'p10': 0.1, 'p50': 0.5, 'p90': 0.9, 'p99': 0.99}
  out = {'fitted': {k: lognormal_quantile(mu, sigma, q) for k, q in qs.items()}}
  out['fitted']['mean'] = math.exp(mu + sigma**2 / 2)
  if samples is not None and len(samples):
    out['sampled'] = {k: float(np.quantile(samples, q)) for k, q in qs.items()}
    out['sampled']['mean'] = float(np.mean(samples))
  return out
