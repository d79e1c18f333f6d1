"""What a filter returns: kept trajectories, removals with reasons, stats."""

import collections
import dataclasses
import math
from typing import Any, Iterable

from search_agent.agent import trajectory


@dataclasses.dataclass(frozen=True, kw_only=True)
class Removal:
  """Why a trajectory left a stage.

  Attributes:
    traj_id: Id of the trajectory.
    task_id: Its task id (to see which questions lose their rollouts).
    reason: Short code, e.g. 'incorrect', 'compression_ratio'.
    detail: Human-readable evidence (the measured value, the offending text).
  """

  traj_id: str
  task_id: str
  reason: str
  detail: str = ''


@dataclasses.dataclass(frozen=True, kw_only=True)
class StageResult:
  """The outcome of one filter over a list of trajectories.

  Attributes:
    name: Stage name, e.g. 'correctness'.
    kept: Trajectories that passed, in input order (possibly modified, e.g.
      with masked turns).
    removed: Trajectories the filter rejected, with reasons.
    errors: Trajectories that could not be decided (e.g. the judge failed);
      neither kept nor counted as rejected.
    stats: Stage statistics (counts, distributions).
  """

  name: str
  kept: tuple[trajectory.Trajectory, ...]
  removed: tuple[Removal, ...] = ()
  errors: tuple[Removal, ...] = ()
  stats: dict[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def n_in(self) -> int:
    return len(self.kept) + len(self.removed) + len(self.errors)

  def reasons(self) -> dict[str, int]:
    """Removal counts per reason, most frequent first."""
    return dict(
        collections.Counter(r.reason for r in self.removed).most_common()
    )


def removal(
    traj: trajectory.Trajectory, reason: str, detail: str = ''
) -> Removal:
  return Removal(
      traj_id=traj.id, task_id=traj.task_id, reason=reason, detail=detail
  )


def split(
    name: str,
    trajs: Iterable[trajectory.Trajectory],
    verdicts: Iterable[Removal | None],
    stats: dict[str, Any] | None = None,
) -> StageResult:
  """Builds a StageResult from one verdict (None = keep) per trajectory."""
  kept, removed = [], []
  for traj, verdict in zip(trajs, verdicts, strict=True):
    if verdict is None:
      kept.append(traj)
    else:
      removed.append(verdict)
  return StageResult(
      name=name, kept=tuple(kept), removed=tuple(removed), stats=stats or {}
  )


def quantiles(values: Iterable[float]) -> dict[str, float]:
  """min/p10/p50/p90/p99/max of `values` (nearest rank), {} when empty."""
  xs = sorted(values)
  if not xs:
    return {}
  out = {'n': len(xs)}
  for label, q in (('min', 0), ('p10', 10), ('p50', 50), ('p90', 90)):
    out[label] = round(xs[_rank(len(xs), q)], 4)
  out['p99'] = round(xs[_rank(len(xs), 99)], 4)
  out['max'] = round(xs[-1], 4)
  return out


def _rank(n: int, q: float) -> int:
  """Nearest-rank index of the q-th percentile among n sorted values."""
  return min(n - 1, max(0, math.ceil(q * n / 100) - 1))
