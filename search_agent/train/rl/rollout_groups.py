"""Records that rollout workers hand the learner: scored trajectories, groups.

A rollout worker turns each agent rollout into a `ScoredTrajectory` (its
token-exact segments, `TokenRecord`s with per-token sampling logprobs and
policy versions, plus its reward) and the rollouts of one question into a
`RolloutGroup`. The group is the unit of readiness, replay and scheduling.
A rollout whose context never slid has one segment; each slide of the
context window starts another (`agent.token_record`), and the learner trains
every segment with the rollout's advantage.
"""

import dataclasses
from typing import Any

from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import outcome


class GroupFormatError(ValueError):
  """A serialized rollout group is malformed; the message names the field."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScoredTrajectory:
  """One scored rollout.

  Attributes:
    trajectory_id: Id of the `Trajectory` it came from.
    segments: Its token-exact segments (token ids, loss mask, sampling
      logprobs, policy versions), at least one.
    reward: Total reward r (e.g. 0.6 y + 0.4 c).
    correct: Answer correctness y, kept for metrics and the second pass.
    coverage: Claim coverage c, kept for metrics and the second pass.
  """

  trajectory_id: str
  segments: tuple[traj_lib.TokenRecord, ...]
  reward: float
  correct: float = 0.0
  coverage: float = 1.0

  def __post_init__(self):
    if not self.segments:
      raise GroupFormatError(f'trajectory {self.trajectory_id}: no segments')

  @property
  def oldest_version(self) -> int:
    gen = [
        v for s in self.segments for v, m in zip(s.versions, s.loss_mask) if m
    ]
    return min(gen, default=-1)

  @property
  def slid(self) -> bool:
    """True when the context slid (more than one segment)."""
    return len(self.segments) > 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class RolloutGroup:
  """The rollouts of one question, complete and scored (a "ready" group).

  Attributes:
    group_id: Unique id (task id and dispatch, e.g. 'q17@d3').
    task_id: The task the rollouts attempt.
    dispatch_batch: Index of the dispatch batch that launched it.
    trajectories: Its scored rollouts (4 in the recipe).
    meta: What the worker measured (seconds, worker, rollouts dropped by
      the token-exactness check, statuses); not used by the loss.
  """

  group_id: str
  task_id: str
  dispatch_batch: int
  trajectories: tuple[ScoredTrajectory, ...]
  meta: dict[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def rewards(self) -> tuple[float, ...]:
    return tuple(t.reward for t in self.trajectories)

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'RolloutGroup':
    try:
      trajs = tuple(
          ScoredTrajectory(
              trajectory_id=t['trajectory_id'],
              segments=tuple(
                  _token_record(r) for r in t.get('segments') or [t['tokens']]
              ),
              reward=float(t['reward']),
              correct=float(t.get('correct', 0.0)),
              coverage=float(t.get('coverage', 1.0)),
          )
          for t in obj['trajectories']
      )
      return cls(
          group_id=str(obj['group_id']),
          task_id=str(obj['task_id']),
          dispatch_batch=int(obj['dispatch_batch']),
          trajectories=trajs,
          meta=dict(obj.get('meta', {})),
      )
    except (KeyError, TypeError, ValueError) as e:
      raise GroupFormatError(f'malformed rollout group: {e!r}') from e


def _token_record(obj: dict[str, Any]) -> traj_lib.TokenRecord:
  return traj_lib.TokenRecord(
      token_ids=tuple(obj['token_ids']),
      loss_mask=tuple(obj['loss_mask']),
      logprobs=tuple(obj['logprobs']),
      versions=tuple(obj['versions']),
      routed_experts=obj.get('routed_experts'),
  )


def scored(
    traj: traj_lib.Trajectory, reward: outcome.RolloutReward
) -> ScoredTrajectory:
  """Pairs a rollout's token-exact segments with its reward.

  Raises:
    GroupFormatError: the trajectory has no token-exact segments (the
      learner cannot train on text alone).
  """
  if not traj.segments:
    raise GroupFormatError(
        f'trajectory {traj.id} has no tokens; roll out with a backend that'
        ' returns token ids, logprobs and policy versions'
    )
  return ScoredTrajectory(
      trajectory_id=traj.id,
      segments=traj.segments,
      reward=reward.total,
      correct=reward.correct,
      coverage=reward.coverage,
  )
