"""One seed of a SearchMaster iteration: propose, filter, solve, reward.

For a seed document: K_P Proposer rollouts (ECG or the naive prompt) -> the
four filters -> K_S Solver rollouts per passing task, each judged by the
Verifier (z) with depth h = unique search queries -> rewards
(rewards/searchmaster.py: SDR or the naive success-rate term, OOP in both
roles) -> the seed gate and the highest-reward passing task, whose K_S
Solver rollouts form the seed's Solver group. Trainer-free: rollouts come
from a `RunRollout` callable (the RL hook runs them on the policy).
"""

import asyncio
import dataclasses
from typing import Any, Awaitable, Callable

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import searchmaster as sm
from search_agent.selfplay import filters as filters_lib
from search_agent.selfplay import proposal as proposal_lib
from search_agent.selfplay import verifier as verifier_lib

DIFFICULTIES = ('sdr', 'success_rate')
RunRollout = Callable[
    [str, str, str, str], Awaitable[tuple[traj_lib.Trajectory, bool]]
]
"""(role, traj_id, system prompt, user message) -> (trajectory, usable):
usable = token-exact, so it may enter a GRPO group."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class SelfPlayConfig:
  """One self-play iteration's config_lib.

  Attributes:
    k_proposer: K_P, Proposer rollouts per seed.
    k_solver: K_S, Solver rollouts per passing task.
    ecg: The Evidence-Chain Generator prompt (False: the naive prompt).
    difficulty: 'sdr' (search-depth reward) or 'success_rate' (the naive
      ablation's 1 - |2C/K_S - 1|).
    oop: Subtract the over-opening penalty (False: lambda = 0).
    seed_gate: Discard seeds whose best task reward is <= r0.
    seed_chars: Characters of the seed document shown to the Proposer.
    filters: Filter thresholds.
    rewards: Reward constants.
  """

  k_proposer: int = 8
  k_solver: int = 8
  ecg: bool = True
  difficulty: str = 'sdr'
  oop: bool = True
  seed_gate: bool = True
  seed_chars: int = 4000
  filters: filters_lib.FilterConfig = filters_lib.FilterConfig()
  rewards: sm.SearchMasterRewards = sm.SearchMasterRewards()

  def __post_init__(self):
    if self.difficulty not in DIFFICULTIES:
      raise ValueError(
          f'difficulty {self.difficulty!r}: use one of {DIFFICULTIES}'
      )
    if min(self.k_proposer, self.k_solver) < 1:
      raise ValueError('k_proposer and k_solver must be >= 1')

  @property
  def reward_cfg(self) -> sm.SearchMasterRewards:
    if self.oop:
      return self.rewards
    return dataclasses.replace(self.rewards, oop_lambda=0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Played:
  """One scored rollout of either role."""

  traj: traj_lib.Trajectory
  usable: bool
  base: float
  reward: float
  n_search: int
  n_open: int
  depth: int
  correct: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class SeedOutcome:
  """Everything one seed produced.

  Attributes:
    seed_id: The seed task's id.
    proposer: The K_P Proposer rollouts, scored.
    filters: Their filter outcomes (aligned with `proposer`).
    solvers: Solver rollouts per passing candidate index.
    chosen: Index of the highest-reward passing task (None: none passed).
    retained: Whether the seed passed the gate.
    tasks: Every passing task as a `Task` (meta: chain, C, K_S, h_min, ...).
  """

  seed_id: str
  proposer: tuple[Played, ...]
  filters: tuple[filters_lib.FilterOutcome, ...]
  solvers: dict[int, tuple[Played, ...]]
  chosen: int | None
  retained: bool
  tasks: tuple[task_lib.Task, ...]

  @property
  def solver_group(self) -> tuple[Played, ...]:
    return self.solvers.get(self.chosen, ()) if self.chosen is not None else ()

  @property
  def h_min(self) -> int | None:
    succ = [p.depth for p in self.solver_group if p.correct]
    return min(succ) if succ else None


def _played(traj, usable, base, rcfg, correct=0) -> Played:
  n_s, n_o = sm.search_count(traj, rcfg), sm.open_count(traj, rcfg)
  return Played(
      traj=traj, usable=usable, base=base,
      reward=sm.penalized(base, n_o, n_s, rcfg), n_search=n_s, n_open=n_o,
      depth=sm.search_depth(traj, rcfg), correct=int(correct),
  )  # fmt: skip


def task_reward(cfg: SelfPlayConfig, outcome, solved) -> float:
  """The base Proposer reward of one candidate (SDR or success rate)."""
  rcfg = cfg.reward_cfg
  z = [p.correct for p in solved]
  if outcome.failed is not None or cfg.difficulty == 'sdr':
    return sm.proposer_reward(
        outcome.failed, z, [p.depth for p in solved], rcfg
    )
  return rcfg.r0 + (1 - rcfg.r0) * sm.success_rate_reward(z)


async def play_seed(
    seed: task_lib.Task,
    run: RunRollout,
    verifier: verifier_lib.Verifier,
    cfg: SelfPlayConfig,
    *,
    proposer_system: str,
    solver_system: str,
) -> SeedOutcome:
  """Runs one seed through the whole iteration (see the module docstring)."""
  rcfg = cfg.reward_cfg
  user = proposal_lib.seed_turn(seed, cfg.seed_chars)
  props = await asyncio.gather(*(
      run('proposer', f'{seed.id}/p{j}', proposer_system, user)
      for j in range(cfg.k_proposer)
  ))  # fmt: skip
  outcomes = await asyncio.gather(
      *(filters_lib.check(t, verifier, cfg.filters, rcfg) for t, _ in props)
  )
  passing = [j for j, o in enumerate(outcomes) if o.failed is None]

  async def solve(j: int, i: int) -> Played:
    prop = outcomes[j].proposal
    traj, usable = await run(
        'solver', f'{seed.id}/p{j}/s{i}', solver_system, prop.question
    )
    z = await verifier.correct(prop.question, prop.answer, traj.final_answer)
    base = sm.solver_reward(z, sm.search_count(traj, rcfg))
    return _played(traj, usable, base, rcfg, z)

  flat = await asyncio.gather(
      *(solve(j, i) for j in passing for i in range(cfg.k_solver))
  )
  solvers = {
      j: tuple(flat[n * cfg.k_solver : (n + 1) * cfg.k_solver])
      for n, j in enumerate(passing)
  }
  bases = [task_reward(cfg, o, solvers.get(j, ()))
           for j, o in enumerate(outcomes)]  # fmt: skip
  proposer = tuple(_played(t, u, b, rcfg) for (t, u), b in zip(props, bases))
  chosen = max(passing, key=lambda j: (bases[j], -j)) if passing else None
  retained = sm.keep_seed(bases, rcfg.r0) if cfg.seed_gate else True
  tasks = tuple(
      _task(seed, j, outcomes[j].proposal, proposer[j], solvers[j], retained,
            j == chosen)
      for j in passing
  )  # fmt: skip
  return SeedOutcome(
      seed_id=seed.id, proposer=proposer, filters=tuple(outcomes),
      solvers=solvers, chosen=chosen, retained=retained, tasks=tasks,
  )  # fmt: skip


def _task(seed, j, prop, played, solved, retained, chosen) -> task_lib.Task:
  succ = [p.depth for p in solved if p.correct]
  meta: dict[str, Any] = {
      'source': 'searchmaster',
      'seed': seed.id,
      'seed_title': seed.meta.get('title', ''),
      'proposal': f'{seed.id}/p{j}',
      'chain': [dataclasses.asdict(e) for e in prop.chain],
      'proposer_reward': played.reward,
      'proposer_base_reward': played.base,
      'solver_correct': sum(p.correct for p in solved),
      'k_solver': len(solved),
      'h_min': min(succ) if succ else None,
      'seed_retained': retained,
      'chosen': chosen,
  }
  return task_lib.Task(
      id=f'{seed.id}/p{j}',
      question=prop.question,
      answer=prop.answer,
      evidence=tuple(e.doc for e in prop.chain),
      meta=meta,
  )
