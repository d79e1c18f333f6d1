"""A deterministic virtual-clock simulator around the REAL scheduler.

Rollout groups take lognormal times (see rollout_times.py) on a fixed number
of generation slots; the learner streams gradient chunks of ready groups and
pays an optimizer-apply + weight-broadcast cost per update. The `Scheduler`
decides every dispatch, chunk and update. Each group is generated in turns;
generation segments carry the worker's weight version, so the simulator
reports the token-age histogram the version mask would see. With
`partial=True`, weight updates interrupt in-flight requests at the request
level: the partial turn is discarded and the rollout resumes from its
committed prefix under the new weights (Iris); synchronous schedules then
also over-sample and carry interrupted groups to the next step.

The headline `synchronous` baseline runs at equal resources: each step is as
many groups as there are generation slots, so it keeps every slot busy while
work exists, as ready-first does. `sync_32_groups` is the labelled variant
with the scheduler's own step size (32 groups on 42 slots: idle capacity).
"""

import dataclasses
import heapq
import itertools
import math

import numpy as np

from search_agent.train.rl import rollout_times
from search_agent.train.rl import scheduler as sched_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterConfig:
  """The simulated cluster.

  Attributes:
    generation_nodes: Rollout nodes.
    group_slots_per_node: Groups one generation node runs concurrently.
    training_nodes: Learner nodes.
    learner_node_minutes_per_group: Gradient cost of one group (4
      trajectories) in node-minutes; divided by training_nodes.
    apply_minutes: Optimizer step plus weight broadcast per update.
    turn_minutes: Length of one assistant request (the partial-rollout unit).
  """

  generation_nodes: int = 7
  group_slots_per_node: int = 6
  training_nodes: int = 10
  learner_node_minutes_per_group: float = 1.5
  apply_minutes: float = 1.0
  turn_minutes: float = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class SimConfig:
  """One simulated run.

  Attributes:
    cluster: Cluster shape and costs.
    times: Group-time quantiles the durations are fitted to.
    scheduler: The real scheduler's configuration.
    partial: Request-level interruption at weight updates (Iris).
    updates: Optimizer updates to simulate.
    zero_signal_prob: Chance a group has all-zero advantages (dropped).
    max_token_age: The version-mask limit, for the over-age fraction.
    seed: Seed of group durations (the same tasks get the same times in
      every schedule).
  """

  cluster: ClusterConfig = ClusterConfig()
  times: rollout_times.GroupTimes = rollout_times.GroupTimes()
  scheduler: sched_lib.SchedulerConfig = sched_lib.SchedulerConfig()
  partial: bool = False
  updates: int = 50
  zero_signal_prob: float = 0.0
  max_token_age: int = 8
  seed: int = 0


@dataclasses.dataclass
class _Group:
  dispatch: sched_lib.Dispatch
  work: float  # minutes of generation the group needs
  zero_signal: bool
  done: float = 0.0  # progress at `mark`
  mark: float = 0.0  # time of the last progress mark
  running: bool = True
  epoch: int = 0
  segments: list = dataclasses.field(default_factory=list)  # [s, e, version]


class Simulation:
  """Event loop; `run()` returns the report dict."""

  def __init__(self, cfg: SimConfig):
    self.cfg = cfg
    self.sched = sched_lib.Scheduler(cfg.scheduler)
    self.mu, self.sigma = rollout_times.fit_lognormal(cfg.times)
    self.rng = np.random.default_rng(cfg.seed)
    self.slots = cfg.cluster.generation_nodes * cfg.cluster.group_slots_per_node
    self.now, self.events, self.seq = 0.0, [], itertools.count()
    self.groups: dict[str, _Group] = {}
    self.gen_version = 0
    self.learner_busy, self.busy_minutes = False, 0.0
    self.gen_minutes, self.wasted_minutes = 0.0, 0.0
    self.age_tokens = np.zeros(64)
    self.durations, self.update_times, self.tasks = [], [], itertools.count()
    self.dispatches: list[sched_lib.Dispatch] = []
    self._done_groups: dict[str, _Group] = {}
    self.peak_running = 0

  def _push(self, dt, kind, payload=None):
    heapq.heappush(self.events, (self.now + dt, next(self.seq), kind, payload))

  def _advance(self, g: _Group) -> None:
    """Credits progress since the last mark to the open segment."""
    if g.running:
      step = self.now - g.mark
      g.done += step
      g.segments[-1][1] = g.done
      self.gen_minutes += step
    g.mark = self.now

  def _schedule_finish(self, g: _Group) -> None:
    g.epoch += 1
    self._push(g.work - g.done, 'finish', (g.dispatch.group_id, g.epoch))

  def _fill(self) -> None:
    running = len(self.groups)
    while running < self.slots and self.sched.can_dispatch():
      d = self.sched.dispatch(f'q{next(self.tasks)}')
      work = float(self.rng.lognormal(self.mu, self.sigma))
      zero = bool(self.rng.uniform() < self.cfg.zero_signal_prob)
      self.durations.append(work)
      self.dispatches.append(d)
      g = _Group(
          d, work, zero, mark=self.now, segments=[[0.0, 0.0, self.gen_version]]
      )
      self.groups[d.group_id] = g
      self._schedule_finish(g)
      running += 1
    self.peak_running = max(self.peak_running, running)

  def _on_finish(self, gid, epoch) -> None:
    g = self.groups.get(gid)
    if g is None or g.epoch != epoch or not g.running:
      return
    self._advance(g)
    del self.groups[gid]
    self.sched.mark_ready(gid, has_signal=not g.zero_signal)
    self._done_groups[gid] = g
    self._kick_learner()
    self._fill()

  def _kick_learner(self) -> None:
    if self.learner_busy:
      return
    chunk = self.sched.take()
    if not chunk:
      return
    v = self.sched.version
    for gid in chunk:
      for s, e, ver in self._done_groups.pop(gid).segments:
        self.age_tokens[min(v - ver, 63)] += e - s
    c = self.cfg.cluster
    cost = len(chunk) * c.learner_node_minutes_per_group / c.training_nodes
    self._busy(cost, 'grads_done')

  def _busy(self, minutes, kind) -> None:
    self.learner_busy = True
    self.busy_minutes += minutes
    self._push(minutes, kind)

  def _on_grads_done(self) -> None:
    self.learner_busy = False
    if self.sched.update_full:
      if self.cfg.scheduler.synchronous:
        for g in self.groups.values():  # generation waits for the weights
          self._advance(g)
          g.running = False
      self._busy(self.cfg.cluster.apply_minutes, 'apply_done')
    else:
      self._kick_learner()

  def _on_apply_done(self) -> None:
    self.learner_busy = False
    self.sched.apply_update()
    self.gen_version = self.sched.version
    self.update_times.append(self.now)
    turn = self.cfg.cluster.turn_minutes
    for g in self.groups.values():
      self._advance(g)
      if self.cfg.partial:  # drop the partial request, keep committed turns
        keep = math.floor(g.done / turn) * turn
        self.wasted_minutes += g.done - keep
        g.done = keep
        g.segments = [
            [s, min(e, keep), v] for s, e, v in g.segments if s < keep
        ]
      g.running = True
      g.segments.append([g.done, g.done, self.gen_version])
      self._schedule_finish(g)
    self._fill()
    self._kick_learner()

  def run(self) -> dict:
    self._fill()
    while len(self.update_times) < self.cfg.updates:
      if not self.events:
        raise sched_lib.SchedulerError(
            f'deadlock at update {self.sched.version}: nothing in flight,'
            f' {len(self.sched.ready)} ready, admission closed'
        )
      t, _, kind, payload = heapq.heappop(self.events)
      self.now = t
      if kind == 'finish':
        self._on_finish(*payload)
      elif kind == 'grads_done':
        self._on_grads_done()
      else:
        self._on_apply_done()
    return self._report()

  def _report(self) -> dict:
    hours = self.now / 60.0
    trajs = 4 * self.cfg.updates * self.cfg.scheduler.groups_per_update
    hist = self.age_tokens / max(self.age_tokens.sum(), 1e-12)
    last = int(np.nonzero(hist)[0].max()) if hist.any() else 0
    cdf = np.cumsum(hist)
    return {
        'hours': float(hours),
        'trajectories_per_hour': float(trajs / hours),
        'learner_utilization': float(self.busy_minutes / self.now),
        'generation_utilization': float(
            self.gen_minutes / (self.slots * self.now)
        ),
        'wasted_generation_fraction': float(
            self.wasted_minutes / max(self.gen_minutes, 1e-12)
        ),
        'minutes_per_update': float(self.now / self.cfg.updates),
        'token_age_hist': [round(float(x), 5) for x in hist[: last + 1]],
        'mean_token_age': float((hist * np.arange(64)).sum()),
        'p99_token_age': int(np.searchsorted(cdf, 0.99)),
        'max_token_age': last,
        'over_age_limit_fraction': float(
            hist[self.cfg.max_token_age + 1 :].sum()
        ),
        'dropped_groups': len(self.sched.dropped),
        'groups_per_update': self.cfg.scheduler.groups_per_update,
        'slots': self.slots,
        'peak_busy_slots': self.peak_running,
    }


def simulate(cfg: SimConfig) -> dict:
  """Runs one schedule and returns its report (see `Simulation._report`)."""
  sim = Simulation(cfg)
  report = sim.run()
  report['group_minutes'] = rollout_times.quantile_table(
      sim.mu, sim.sigma, np.asarray(sim.durations)
  )
  return report


MODES = (
    'synchronous',
    'sync_32_groups',
    'synchronous+partial',
    'ready_first',
    'ready_first+partial',
)


def mode_config(base: SimConfig, mode: str, oversample: float) -> SimConfig:
  """`base` turned into one of MODES.

  The scheduler keeps its sizes, except `synchronous`, whose step is one
  group per generation slot (equal resources with ready-first).
  """
  if mode not in MODES:
    raise ValueError(f'unknown schedule {mode!r}; want one of {MODES}')
  sync = mode.startswith('sync')
  partial = mode.endswith('+partial')
  sched = dataclasses.replace(
      base.scheduler,
      synchronous=sync,
      oversample=oversample if sync and partial else 0.0,
  )
  if mode == 'synchronous':
    c = base.cluster
    sched = dataclasses.replace(
        sched,
        groups_per_update=c.generation_nodes * c.group_slots_per_node,
    )
  return dataclasses.replace(base, scheduler=sched, partial=partial)


def compare(base: SimConfig, oversample: float, modes=MODES) -> dict[str, dict]:
  """Reports of every schedule on the same tasks and durations."""
  return {m: simulate(mode_config(base, m, oversample)) for m in modes}
