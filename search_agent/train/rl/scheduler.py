"""Ready-first (and synchronous) scheduling of rollout groups.

Open recipe, "Asynchronous Training": a group is ready once all its rollouts
are complete and scored; gradient computation begins once 8 groups are ready;
an optimizer update accumulates 32 groups (128 trajectories) mixing dispatch
batches and policy versions; new dispatches stay within 8 batches of the
learner's current update, while already dispatched groups remain selectable.
Each group (so each trajectory) is used in exactly one update.

The scheduler is a pure state machine: no clock, no threads, no I/O. Rollout
workers, the learner, the durable replay queue and the simulator drive it.
`synchronous=True` gives the on-policy baseline: a step dispatches
`groups_per_update * (1 + oversample)` groups (carry-overs included) and
nothing more until its update is applied; oversample > 0 is Iris's partial
rollout schedule (interrupted groups carry over to the next step).

A group dropped by dynamic sampling (or cancelled) is replaced: it gives its
dispatch-batch slot back, so a batch yields 32 trainable groups and the
admission window cannot deadlock when many groups carry no signal.
"""

import collections
import dataclasses
from typing import Any


class SchedulerError(RuntimeError):
  """A caller broke the scheduling contract (e.g. a group used twice)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerConfig:
  """Scheduling constants.

  Attributes:
    groups_per_update: Groups accumulated into one optimizer update.
    start_after_ready: Ready groups needed before gradients are computed.
    dispatch_batch_groups: Groups in one dispatch batch.
    admission_window: Dispatch batches allowed ahead of the current update.
    synchronous: On-policy baseline instead of ready-first.
    oversample: Synchronous only: extra fraction dispatched per step.
  """

  groups_per_update: int = 32
  start_after_ready: int = 8
  dispatch_batch_groups: int = 32
  admission_window: int = 8
  synchronous: bool = False
  oversample: float = 0.0


@dataclasses.dataclass(frozen=True)
class Dispatch:
  """One group handed to rollout workers."""

  group_id: str
  task_id: str
  batch: int
  version: int  # learner version when dispatched


def chunk_size(ready: int, accumulated: int, cfg: SchedulerConfig) -> int:
  """The ready-first rule: how many ready groups the next chunk takes.

  0 until `start_after_ready` groups are ready (or all the update still
  lacks, when fewer are missing); never more than the update lacks.
  """
  missing = cfg.groups_per_update - accumulated
  if ready < min(cfg.start_after_ready, missing):
    return 0
  return min(missing, ready)


class Scheduler:
  """Tracks dispatched, ready, accumulating and consumed groups."""

  def __init__(self, cfg: SchedulerConfig):
    if not 1 <= cfg.start_after_ready <= cfg.groups_per_update:
      raise ValueError('need 1 <= start_after_ready <= groups_per_update')
    self.cfg = cfg
    self.version = 0  # == index of the update being assembled
    self.in_flight: dict[str, Dispatch] = {}
    self.ready: collections.deque[str] = collections.deque()
    self.accumulating: list[str] = []
    self.used_in: dict[str, int] = {}  # group id -> update index
    self.dropped: set[str] = set()
    self._batch, self._in_batch = 0, 0
    self._replacements = 0  # slots given back by dropped groups
    self._step_target = self._sync_target() if cfg.synchronous else 0

  def _sync_target(self) -> int:
    return round(self.cfg.groups_per_update * (1 + self.cfg.oversample))

  @property
  def outstanding(self) -> int:
    return len(self.in_flight) + len(self.ready) + len(self.accumulating)

  def can_dispatch(self) -> bool:
    """Whether admission allows another group now."""
    if self.cfg.synchronous:
      return self.outstanding < self._step_target
    if self._replacements:
      return True
    if self._in_batch < self.cfg.dispatch_batch_groups:
      return self._batch < self.version + self.cfg.admission_window
    return self._batch + 1 < self.version + self.cfg.admission_window

  def dispatch(self, task_id: str) -> Dispatch:
    """Admits one group for `task_id`.

    Raises:
      SchedulerError: admission does not allow it (check can_dispatch).
    """
    if not self.can_dispatch():
      raise SchedulerError('admission window is full; call can_dispatch()')
    if self._replacements and not self.cfg.synchronous:
      self._replacements -= 1  # refills a slot of the current batch
    else:
      full = self._in_batch == self.cfg.dispatch_batch_groups
      if full and not self.cfg.synchronous:
        self._batch, self._in_batch = self._batch + 1, 0
      self._in_batch += 1
    gid = base = f'{task_id}@{self._batch}'
    n = 1
    while self._known(gid):  # the task twice in one batch (a pass wrapped)
      n += 1
      gid = f'{base}#{n}'
    d = Dispatch(gid, task_id, self._batch, self.version)
    self.in_flight[d.group_id] = d
    return d

  def _known(self, group_id: str) -> bool:
    return (
        group_id in self.in_flight
        or group_id in self.used_in
        or group_id in self.dropped
        or group_id in self.ready
        or group_id in self.accumulating
    )

  def mark_ready(self, group_id: str, has_signal: bool = True) -> None:
    """A group finished and was scored; groups without signal are dropped.

    Raises:
      SchedulerError: the group is unknown or not in flight.
    """
    if group_id not in self.in_flight:
      raise SchedulerError(f'group {group_id} is not in flight')
    del self.in_flight[group_id]
    if has_signal:
      self.ready.append(group_id)
    else:
      self._drop(group_id)

  def _drop(self, group_id: str) -> None:
    self.dropped.add(group_id)
    if not self.cfg.synchronous:
      self._replacements += 1

  def cancel(self, group_id: str) -> None:
    """Forgets an in-flight group (e.g. its task failed for good)."""
    if self.in_flight.pop(group_id, None) is None:
      raise SchedulerError(f'group {group_id} is not in flight')
    self._drop(group_id)

  def take(self) -> list[str]:
    """Ready groups for the next gradient chunk ([] if too few are ready).

    A chunk needs `start_after_ready` ready groups, or all that the update
    still lacks when fewer are missing; it never overfills the update.
    """
    n = chunk_size(len(self.ready), len(self.accumulating), self.cfg)
    chunk = [self.ready.popleft() for _ in range(n)]
    self.accumulating.extend(chunk)
    return chunk

  @property
  def update_full(self) -> bool:
    return len(self.accumulating) == self.cfg.groups_per_update

  def apply_update(self) -> list[str]:
    """Closes the full update: records its groups, bumps the version.

    Raises:
      SchedulerError: the update is not full, or a group was used before.
    """
    if not self.update_full:
      raise SchedulerError(
          f'update {self.version} has {len(self.accumulating)} of'
          f' {self.cfg.groups_per_update} groups'
      )
    for g in self.accumulating:
      if g in self.used_in:
        raise SchedulerError(f'group {g} was already used in an update')
      self.used_in[g] = self.version
    groups, self.accumulating = self.accumulating, []
    self.version += 1
    if self.cfg.synchronous:
      self._step_target = self._sync_target()
      self._batch, self._in_batch = self.version, 0
    return groups

  # -- persistence -------------------------------------------------------
  def to_state(self) -> dict[str, Any]:
    """Everything the scheduler knows, as JSON-able data."""
    return {
        'version': self.version,
        'in_flight': [dataclasses.asdict(d) for d in self.in_flight.values()],
        'ready': list(self.ready),
        'accumulating': list(self.accumulating),
        'used_in': dict(self.used_in),
        'dropped': sorted(self.dropped),
        'batch': self._batch,
        'in_batch': self._in_batch,
        'replacements': self._replacements,
        'step_target': self._step_target,
    }

  @classmethod
  def from_state(
      cls, cfg: SchedulerConfig, state: dict[str, Any], *, version: int
  ) -> 'Scheduler':
    """A scheduler restored from `to_state`, rolled back to `version`.

    `version` is the checkpoint's: groups accumulating for an update that
    never reached a checkpoint, or used by updates >= `version`, become
    ready again (oldest first), so each lands in exactly one applied update.
    """
    s = cls(cfg)
    if version > state['version']:
      raise SchedulerError(
          f'checkpoint version {version} is newer than the scheduler state'
          f' ({state["version"]}); the scheduler state file is stale'
      )
    s.version = version
    s.in_flight = {d['group_id']: Dispatch(**d) for d in state['in_flight']}
    back = sorted(
        (g for g, u in state['used_in'].items() if u >= version),
        key=lambda g: state['used_in'][g],
    )
    s.ready = collections.deque(back + list(state['accumulating']))
    s.ready.extend(state['ready'])
    s.used_in = {g: u for g, u in state['used_in'].items() if u < version}
    s.dropped = set(state['dropped'])
    s._batch, s._in_batch = state['batch'], state['in_batch']
    s._replacements = state['replacements']
    s._step_target = state['step_target']
    return s
