"""SearchMaster proposer/solver rewards: SDR and the over-opening penalty.

The seed states the quantities but its equations were lost in extraction; the
forms below follow its text, and every choice it leaves open is a field of
`SearchMasterRewards` (see WORKSPACE.md):
  h_i    = number of unique search queries of solver rollout i;
  h_min  = min over successful rollouts (z_i = 1) of h_i;
  SDR    = min(h_min, H) / H                      (saturates at H = 10);
  R_P    = filter reward          if the task failed a filter,
           r0                      if C = 0 or C = K_S,
           r0 + (1 - r0) * SDR     otherwise (0 < C < K_S);
  R_S    = z_i if the rollout searched at least once, else 0;
  rho    = clip((n_open / n_search - alpha) / (beta - alpha), 0, 1)
           with n_open, n_search the open and search CALLS,
           (1 if n_search = 0 and n_open > 0; 0 if neither);
  R      = R_base - lambda * rho.
"""

import dataclasses
from typing import Sequence

from search_agent.agent import trajectory as traj_lib

FILTERS = ('tool_use', 'format', 'validity', 'parametric')


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchMasterRewards:
  """SearchMaster reward constants.

  Attributes:
    r0: Base reward of a passing task that is too hard (C = 0) or too easy.
    depth_horizon: H, the unique-query depth at which SDR saturates.
    oop_alpha: Open-to-search ratio where the penalty starts.
    oop_beta: Ratio where it reaches its maximum.
    oop_lambda: Penalty coefficient.
    filter_rewards: Proposer reward of a task failing each filter.
    search_tools: Tool names counted as searches (their 'query' argument,
      a string or a list of strings, gives the queries).
    open_tools: Tool names counted as opens.
  """

  r0: float = 0.2
  depth_horizon: int = 10
  oop_alpha: float = 1.5
  oop_beta: float = 2.5
  oop_lambda: float = 0.5
  filter_rewards: tuple[tuple[str, float], ...] = tuple(
      (f, 0.0) for f in FILTERS
  )
  search_tools: tuple[str, ...] = ('search',)
  open_tools: tuple[str, ...] = ('open', 'visit')

  def __post_init__(self):
    if not self.oop_beta > self.oop_alpha:
      raise ValueError(
          f'oop_beta ({self.oop_beta}) must exceed oop_alpha'
          f' ({self.oop_alpha})'
      )
    if self.depth_horizon < 1:
      raise ValueError(f'depth_horizon must be >= 1, got {self.depth_horizon}')


def search_queries(
    traj: traj_lib.Trajectory, cfg: SearchMasterRewards
) -> list[str]:
  """Every search query of a trajectory, in order, whitespace-normalized."""
  out = []
  for call in traj.tool_calls:
    if call.name in cfg.search_tools:
      q = call.arguments.get('query', ())
      for s in [q] if isinstance(q, str) else q:
        out.append(' '.join(str(s).lower().split()))
  return out


def search_depth(traj: traj_lib.Trajectory, cfg: SearchMasterRewards) -> int:
  """h: the number of unique search queries of a rollout."""
  return len(set(search_queries(traj, cfg)))


def open_count(traj: traj_lib.Trajectory, cfg: SearchMasterRewards) -> int:
  """n_open: the number of open calls."""
  return sum(c.name in cfg.open_tools for c in traj.tool_calls)


def search_count(traj: traj_lib.Trajectory, cfg: SearchMasterRewards) -> int:
  """n_search: the number of search CALLS (the OOP ratio's denominator).

  The seed counts "open and search calls" for OOP; the depth h counts unique
  queries instead (one call may hold several queries).
  """
  return sum(c.name in cfg.search_tools for c in traj.tool_calls)


def depth_reward(
    correct: Sequence[int], depths: Sequence[int], horizon: int
) -> float:
  """SDR = min(h_min, H) / H over the successful rollouts.

  Raises:
    ValueError: no rollout succeeded (SDR is defined only for C > 0).
  """
  succ = [h for z, h in zip(correct, depths, strict=True) if z]
  if not succ:
    raise ValueError('SDR needs at least one successful solver rollout')
  return min(min(succ), horizon) / horizon


def proposer_reward(
    failed_filter: str | None,
    correct: Sequence[int],
    depths: Sequence[int],
    cfg: SearchMasterRewards,
) -> float:
  """Base proposer reward of one candidate task (before OOP).

  Args:
    failed_filter: The first filter the task failed (one of FILTERS), or
      None if it passed them all.
    correct: z_i of its K_S solver rollouts (ignored if it failed a filter).
    depths: h_i of those rollouts.
    cfg: Reward constants.
  """
  if failed_filter is not None:
    rewards = dict(cfg.filter_rewards)
    if failed_filter not in rewards:
      raise ValueError(
          f'unknown filter {failed_filter!r}; want one of {FILTERS}'
      )
    return rewards[failed_filter]
  c, k = sum(correct), len(correct)
  if k == 0:
    raise ValueError('a passing task needs solver rollouts')
  if c in (0, k):
    return cfg.r0
  return cfg.r0 + (1 - cfg.r0) * depth_reward(
      correct, depths, cfg.depth_horizon
  )


def solver_reward(correct: int, n_search: int) -> float:
  """Base solver reward: correct and supported by at least one search."""
  return float(bool(correct) and n_search > 0)


def over_opening(n_open: int, n_search: int, cfg: SearchMasterRewards) -> float:
  """rho_oop in [0, 1], linear in the open-to-search ratio."""
  if n_search == 0:
    return 1.0 if n_open > 0 else 0.0
  ratio = n_open / n_search
  x = (ratio - cfg.oop_alpha) / (cfg.oop_beta - cfg.oop_alpha)
  return min(1.0, max(0.0, x))


def penalized(
    base: float, n_open: int, n_search: int, cfg: SearchMasterRewards
) -> float:
  """R = R_base - lambda * rho_oop."""
  return base - cfg.oop_lambda * over_opening(n_open, n_search, cfg)


def keep_seed(proposer_base_rewards: Sequence[float], r0: float) -> bool:
  """Seed-level gate: keep only if some task's base reward exceeds r0."""
  return max(proposer_base_rewards, default=r0) > r0


def success_rate_reward(correct: Sequence[int]) -> float:
  """The naive self-play ablation's difficulty term 1 - |2C/K - 1|."""
  return 1.0 - abs(2 * sum(correct) / len(correct) - 1.0)
