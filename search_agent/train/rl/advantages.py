"""Group-relative advantages, dynamic sampling and the second-pass rule.

Open recipe, "Outcome and Claim Rewards" / "Task Sampling":
  A_i = r_i - mean_j r_j          (Dr. GRPO: no division by the std);
a group whose advantages are all zero is dropped from optimization; a second
pass over the question pool skips only questions whose first-pass rollouts
were all correct with full claim coverage. SearchMaster's GRPO variant
divides by the group std plus a small constant (`normalize_std=True`).
"""

import dataclasses
from typing import Sequence

import numpy as np

from search_agent.train.rl import rollout_groups


@dataclasses.dataclass(frozen=True, kw_only=True)
class AdvantageConfig:
  """How rewards become advantages.

  Attributes:
    normalize_std: Divide by the group std (SearchMaster GRPO); the open
      recipe keeps it False.
    std_eps: Constant added to the std when normalizing.
    zero_atol: |A| at or below this counts as zero for dynamic sampling.
  """

  normalize_std: bool = False
  std_eps: float = 1e-6
  zero_atol: float = 1e-9


def group_advantages(
    rewards: Sequence[float], cfg: AdvantageConfig = AdvantageConfig()
) -> np.ndarray:
  """Advantages of one group, float64 [group_size]."""
  r = np.asarray(rewards, dtype=np.float64)
  if r.ndim != 1 or r.size == 0:
    raise ValueError(f'rewards must be a non-empty list, got shape {r.shape}')
  a = r - r.mean()
  if cfg.normalize_std:
    a = a / (r.std() + cfg.std_eps)
  return a


def has_signal(
    advantages: np.ndarray, cfg: AdvantageConfig = AdvantageConfig()
) -> bool:
  """Dynamic sampling: False when every advantage of the group is zero."""
  return bool(np.any(np.abs(advantages) > cfg.zero_atol))


def group_has_signal(
    rewards: Sequence[float], cfg: AdvantageConfig = AdvantageConfig()
) -> bool:
  """Whether a group's rewards give some rollout a non-zero advantage."""
  return has_signal(group_advantages(rewards, cfg), cfg)


def keep_groups(
    groups: Sequence[rollout_groups.RolloutGroup],
    cfg: AdvantageConfig = AdvantageConfig(),
) -> tuple[
    list[rollout_groups.RolloutGroup], list[rollout_groups.RolloutGroup]
]:
  """Splits groups into (kept, dropped) by dynamic sampling."""
  kept, dropped = [], []
  for g in groups:
    (kept if group_has_signal(g.rewards, cfg) else dropped).append(g)
  return kept, dropped


def needs_second_pass(group: rollout_groups.RolloutGroup) -> bool:
  """False only if every first-pass rollout was correct with full coverage."""
  return not all(
      t.correct >= 1.0 and t.coverage >= 1.0 for t in group.trajectories
  )
