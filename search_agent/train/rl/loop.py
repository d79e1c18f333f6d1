"""The RL learner loop: dispatch, collect, ready-first chunks, update, sync.

One `Scheduler` drives it (the simulator drives the same class). Each turn:
  1. dispatch: while admission allows, the next task of the pool becomes a
     group; the state file is written, then the work item is enqueued;
  2. collect: delivered groups become ready (or dropped by dynamic
     sampling: all advantages zero, or no token-exact rollout left);
  3. chunk: once `start_after_ready` groups are ready (`Scheduler.take`),
     their gradient SUMS are added (IcePop, routing replayed, token-age
     mask); before the very first chunk the step-0 parity check runs;
  4. update: when the update holds `groups_per_update` groups, the sums are
     divided once by the eligible-token count, the optimizer (Muon) steps,
     the queue journals the groups, the checkpoint is saved and the new
     policy version is published for the samplers.
Restart: the latest checkpoint gives params, optimizer state and version;
the queue re-offers groups of later updates; the scheduler state file is
rolled back to that version; lost work items are enqueued again; weight
versions past the checkpoint are removed (their updates are lost).

Several processes (one JAX program over a pod slice's hosts): process 0
alone runs the scheduler, the queue and every shared file (state, done,
parity, metrics, journal). It drives the others in lockstep with broadcast
commands: `chunk` (the group ids it took; each process loads them from the
queue and packs the same microbatches, placed as global arrays with their
rows split over the mesh's batch axes, row_placement.py), `apply`
(the optimizer step), `save` (after process 0's journal commit and metrics:
the collective checkpoint and weight publish), `wait` (at least every
`sync_s` while it polls, so no process sits in a collective for long),
`done` and `abort` (process 0 failed between collectives).
docs/pods-rl.md has the sequence.
"""

import dataclasses
import os
import pathlib
import time
from typing import Any, Callable

from absl import logging
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import optax

from search_agent import distributed
from search_agent.model import maxtext_model
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import learner
from search_agent.train.rl import learner_state
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import metrics as metrics_lib
from search_agent.train.rl import parity as parity_lib
from search_agent.train.rl import partial
from search_agent.train.rl import policy_logprobs
from search_agent.train.rl import replay_queue
from search_agent.train.rl import row_placement
from search_agent.train.rl import scheduler as sched_lib
from search_agent.train.rl import task_pool
from search_agent.train.rl import weight_sync


def done_path(workdir: str) -> str:
  """Written when the learner reached max_updates (rollout workers stop)."""
  return os.path.join(workdir, 'learner', 'done.json')


class StallError(TimeoutError):
  """No group arrived for too long: are the rollout workers alive?"""


class LeaderError(RuntimeError):
  """Process 0 of a multi-host learner failed; the others stop with it."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoopConfig:
  """The learner loop.

  Attributes:
    max_updates: Stop once this policy version is reached.
    seq_len: Packed length (a longer trajectory is an error).
    microbatch_size: Trajectories per microbatch.
    dynamic_sampling: Drop groups whose advantages are all zero.
    partial_rollouts: Iris: once the update has its groups, rollout workers
      hold (and the server aborts) in-flight requests until the new version
      is published (partial.py).
    checkpoint_every: Checkpoint every this many updates (and the last).
    poll_s: Sleep when nothing happened.
    stall_timeout_s: Longest wait without a delivered group.
    lease_timeout_s: A claim not refreshed for this long goes back to work.
    scheduler: Ready-first scheduling.
    loss: Policy loss.
    advantages: Advantages.
    parity: Step-0 parity tolerance.
    temperature: The rollouts' sampling temperature; the learner scores
      tokens under softmax(logits / temperature), as the sampler recorded
      them (<= 0, greedy, and 1 score the raw model).
    sync_s: Several processes: longest time process 0 leaves the others
      waiting in a collective while it polls the queue.
  """

  max_updates: int
  seq_len: int
  microbatch_size: int
  dynamic_sampling: bool = True
  partial_rollouts: bool = False
  checkpoint_every: int = 1
  poll_s: float = 0.1
  stall_timeout_s: float = 1800.0
  lease_timeout_s: float = 600.0
  scheduler: sched_lib.SchedulerConfig
  loss: loss_lib.PolicyLossConfig
  advantages: adv_lib.AdvantageConfig
  parity: parity_lib.ParityConfig
  temperature: float = 1.0
  sync_s: float = 5.0


def _apply_fn(model: maxtext_model.Model, tx: optax.GradientTransformation):
  def apply(params, opt_state, grads):
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, optax.global_norm(grads)

  fn = jax.jit(apply, donate_argnums=(0, 1))

  def call(*args):
    with model.rules():
      return fn(*args)

  return call


class LearnerLoop:
  """Owns the learner's state and runs updates until max_updates."""

  def __init__(
      self,
      cfg: LoopConfig,
      *,
      model: maxtext_model.Model,
      tx: optax.GradientTransformation,
      tasks: task_pool.TaskPool,
      queue: replay_queue.ReplayQueue,
      weights: weight_sync.WeightStore,
      ckpt: checkpoint_lib.Checkpointer,
      workdir: str,
      check_alive: Callable[[], None] = lambda: None,
  ):
    self.cfg, self.model, self.tx = cfg, model, tx
    self.tasks, self.queue, self.weights, self.ckpt = (
        tasks,
        queue,
        weights,
        ckpt,
    )
    self.workdir = workdir
    self.check_alive = check_alive
    self.state_file = learner_state.StateFile(f'{workdir}/learner/state.json')
    self._logprob_fn = policy_logprobs.make_logprob_fn(model, cfg.temperature)
    self._apply = _apply_fn(model, tx)
    self.payloads: dict[str, Any] = {}
    self.passes: dict[str, int] = {}
    self.pending_dropped: list[str] = []
    # Several processes: process 0 leads, the others follow its commands.
    self.lead = distributed.is_writer()
    self.hosts = jax.process_count()
    replicated = NamedSharding(model.mesh, P())
    self._replicate = jax.jit(lambda x: x, out_shardings=replicated)
    # Each data-parallel shard computes its own rows of a microbatch.
    self._rows = row_placement.RowPlacement.of_model(model)
    logging.info(self._rows.describe(cfg.microbatch_size))
    self._last_command = time.monotonic()
    self._parity_now = False
    self._unrouted = 0
    self.sched, self.metrics = None, None
    self._restore()

  # -- state --------------------------------------------------------------
  def _restore(self) -> None:
    with self.model.rules():
      opt_state = jax.jit(self.tx.init)(self.model.params)
    distributed.barrier('rl-learner-optimizer-built')
    self.params, self.opt_state = self.model.params, opt_state
    # GRPO's KL reference: the initial policy (a copy: updates donate).
    self.ref_params = None
    if self.cfg.loss.objective == 'grpo_clip':
      self.ref_params = jax.tree.map(jnp.copy, self.model.params)
    step = distributed.broadcast(self.ckpt.latest_step() or 0)
    data = {}
    if step:
      state, data = self.ckpt.restore(
          step, {'params': self.params, 'opt_state': self.opt_state}
      )
      self.params, self.opt_state = state['params'], state['opt_state']
    self.version = int(data.get('version', 0))
    self.start_version = self.version
    if self.lead:
      self._restore_lead(data)
    distributed.barrier('rl-learner-restored')
    # The checkpoint's own version was published from these parameters
    # (publish follows the checkpoint), unless the run died in between.
    if not distributed.broadcast(self.version in self.weights.versions()):
      self.weights.publish(self.params, self.version)
    if step:
      logging.info('resumed at policy version %d', self.version)

  def _restore_lead(self, data) -> None:
    """Process 0's side of a restore: queue, scheduler, shared files."""
    self.queue.recover(checkpoint_step=self.version)
    snap = self.state_file.read() or data.get('learner')
    if snap:
      self.sched = sched_lib.Scheduler.from_state(
          self.cfg.scheduler, snap['scheduler'], version=self.version
      )
      self.tasks.load_state(snap['tasks'])
      self.passes = dict(snap['passes'])
      for gid, d in self.sched.in_flight.items():
        if not self.queue.knows(gid):  # dispatched, never enqueued
          self._enqueue(d)
    else:
      self.sched = sched_lib.Scheduler(self.cfg.scheduler)
    pathlib.Path(done_path(self.workdir)).unlink(missing_ok=True)
    partial.clear_interrupt(self.workdir)
    # Versions past the checkpoint hold updates it lost: samplers must not
    # serve them under numbers the resumed learner reuses.
    self.weights.rollback(self.version)
    self.metrics = metrics_lib.RLMetricsWriter(
        self.workdir, self.cfg.max_updates, self.version
    )

  def _snapshot(self) -> dict[str, Any]:
    return {
        'scheduler': self.sched.to_state(),
        'tasks': self.tasks.to_state(),
        'passes': self.passes,
    }

  def _enqueue(self, d: sched_lib.Dispatch) -> None:
    task = self.tasks.tasks[d.task_id]
    self.queue.enqueue(
        d.group_id,
        {
            'task_id': d.task_id,
            'batch': d.batch,
            'version': d.version,
            'pass': self.passes.get(d.group_id, 0),
            'task': task.to_json(),
        },
    )

  # -- one turn -----------------------------------------------------------
  def _dispatch(self) -> None:
    new = []
    while self.sched.can_dispatch():
      task, p = self.tasks.next()
      d = self.sched.dispatch(task.id)
      self.passes[d.group_id] = p
      new.append(d)
    if new:
      self.state_file.write(self._snapshot())  # before the work exists
      for d in new:
        if not self.queue.knows(d.group_id):
          self._enqueue(d)

  def _signal(self, group) -> bool:
    if len(group.trajectories) < 2:
      return False  # failed, or too few token-exact rollouts
    if not self.cfg.dynamic_sampling:
      return True
    return adv_lib.group_has_signal(group.rewards, self.cfg.advantages)

  def _collect(self) -> int:
    n = 0
    for g in self.queue.take(1 << 20):
      gid, n = g.group_id, n + 1
      if gid in self.sched.in_flight:
        keep = self._signal(g)
        self.sched.mark_ready(gid, keep)
        self.tasks.record(g, self.passes.get(gid, 0))
        if keep:
          self.payloads[gid] = g
        else:
          self.pending_dropped.append(gid)
      elif gid in self.sched.ready:  # restored from the state file
        self.payloads[gid] = g
      elif gid in self.sched.dropped:
        self.pending_dropped.append(gid)
      else:
        logging.warning('group %s was never dispatched here; ignored', gid)
    if n:
      self.state_file.write(self._snapshot())
    return n

  def _chunk(self, acc, groups) -> None:
    """Adds the gradient sums of `groups` (every process, same groups)."""
    mbs = learner.pack_update(
        groups,
        seq_len=self.cfg.seq_len,
        batch_size=self.cfg.microbatch_size,
        adv_cfg=self.cfg.advantages,
    )
    self._unrouted += learner.unrouted_rows(mbs)
    if self._parity_now:
      fn = policy_logprobs.jitted_logprobs(self.model, self.cfg.temperature)
      # Padding rows carry no sampled token: the figures are the same.
      report = parity_lib.measure(
          self._rows.gathered(fn),
          self.params,
          [self._rows.pad(mb) for mb in mbs],
          self.cfg.loss,
      )
      logging.info('step-0 parity: %s', report)
    with self.model.rules():
      acc.add(self.params, [self._rows.microbatch(mb) for mb in mbs],
              self.version, self.ref_params)  # fmt: skip
    if self._parity_now and self.lead:
      # After the collective step: a failure here reaches the others as
      # process 0's `abort`, while they wait for its next command.
      parity_lib.check(report, self.cfg.parity, self._parity_path())

  def _parity_path(self) -> str:
    return f'{self.workdir}/parity.json'

  def _parity_done(self) -> bool:
    """A passed check on record (a failed one is run again on resume)."""
    return parity_lib.passed(self._parity_path())

  # -- the loop -----------------------------------------------------------
  def run(self) -> int:
    """Runs updates until `max_updates`; returns the final version."""
    if not self.lead:
      self._follow()
      return self.version
    try:
      while self.version < self.cfg.max_updates:
        self._one_update()
    except Exception as e:
      if self.hosts > 1:  # best effort: the others stop with an error
        self._command('abort', error=f'{type(e).__name__}: {e}')
      raise
    self._command('done')
    self.metrics.close()
    learner_state.StateFile(done_path(self.workdir)).write(
        {'version': self.version}
    )
    return self.version

  # -- several processes ----------------------------------------------------
  def _command(self, op: str, **args) -> None:
    """Process 0: tells the other processes what comes next."""
    self._last_command = time.monotonic()
    if self.hosts > 1:
      distributed.broadcast({'op': op, **args})

  def _idle(self) -> None:
    """Process 0 with nothing to do: sleep, keep the others in step."""
    time.sleep(self.cfg.poll_s)
    if (
        self.hosts > 1
        and time.monotonic() - self._last_command > self.cfg.sync_s
    ):
      self._command('wait')

  def _follow(self) -> None:
    """Processes > 0: run process 0's commands until it is done."""
    acc = self._new_update()
    while True:
      cmd = distributed.broadcast(None)
      op = cmd['op']
      if op == 'wait':
        continue
      if op == 'chunk':
        self._parity_now = cmd['parity']
        self._chunk(acc, self.queue.load(cmd['groups']))
        self._parity_now = False
      elif op == 'apply':
        self._apply_update(acc)
        acc = self._new_update()
      elif op == 'save':
        self.version = cmd['version']
        self._save({'version': self.version})  # process 0's data is kept
      elif op == 'done':
        return
      elif op == 'abort':
        raise LeaderError(f'process 0 failed: {cmd["error"]}')
      else:
        raise LeaderError(f'unknown command {op!r} from process 0')

  def _new_update(self) -> learner.GradientSums:
    self._unrouted = 0
    return learner.GradientSums(self._logprob_fn, self.cfg.loss)

  def _apply_update(self, acc) -> tuple[Any, Any]:
    """Divides once and steps the optimizer (every process); the update's
    metrics and gradient norm, replicated so process 0 can read them."""
    grads, m = acc.result()
    self.params, self.opt_state, gnorm = self._apply(
        self.params, self.opt_state, grads
    )
    jax.block_until_ready(self.params)
    return self._replicate((m, gnorm))

  def _save(self, data: dict[str, Any]) -> None:
    """Checkpoint (when due) and weight publish of `self.version`; collective
    (orbax: every process writes its shards)."""
    if (
        self.version % self.cfg.checkpoint_every == 0
        or self.version >= self.cfg.max_updates
    ):
      self.ckpt.save(
          self.version,
          {'params': self.params, 'opt_state': self.opt_state},
          data,
      )
    self.weights.publish(self.params, self.version)

  def _one_update(self) -> None:
    cfg = self.cfg
    acc = self._new_update()
    t0 = time.monotonic()
    busy, used_groups, last_seen = 0.0, [], time.monotonic()
    last_expire, interrupted = 0.0, False
    while not self.sched.update_full:
      self.check_alive()
      self._dispatch()
      if self._collect():
        last_seen = time.monotonic()
      if (
          cfg.partial_rollouts
          and not interrupted
          and (
              len(self.sched.ready) + len(self.sched.accumulating)
              >= cfg.scheduler.groups_per_update
          )
      ):  # enough groups: hold the over-sampled rollouts (Iris)
        partial.write_interrupt(self.workdir, self.version + 1)
        interrupted = True
      chunk = self.sched.take()
      if chunk:
        missing = [g for g in chunk if g not in self.payloads]
        if missing:
          raise replay_queue.ReplayQueueError(
              f'ready groups {missing} are not in the queue'
          )
        groups = [self.payloads.pop(g) for g in chunk]
        b0 = time.monotonic()
        self._parity_now = self.version == 0 and not self._parity_done()
        self._command('chunk', groups=chunk, parity=self._parity_now)
        self._chunk(acc, groups)
        self._parity_now = False
        busy += time.monotonic() - b0
        used_groups.extend(groups)
        self.state_file.write(self._snapshot())
        last_seen = time.monotonic()
        continue
      now = time.monotonic()
      if now - last_expire > 5.0:
        self.queue.expire_leases(cfg.lease_timeout_s)
        last_expire = now
      if now - last_seen > cfg.stall_timeout_s:
        raise StallError(
            f'no group delivered for {cfg.stall_timeout_s:.0f}s at version'
            f' {self.version}; are the rollout workers alive?'
        )
      self._idle()
    b0 = time.monotonic()
    self._command('apply')
    m, gnorm = self._apply_update(acc)
    busy += time.monotonic() - b0
    self._finish_update(used_groups, m, gnorm, busy, t0)

  def _advantage_groups(self, groups):
    """The GRPO groups (each normalized on its own) that `groups` hold."""
    return groups

  def _finish_update(self, groups, m, gnorm, busy, t0) -> None:
    old = self.version
    used = self.sched.apply_update()
    dropped, self.pending_dropped = self.pending_dropped, []
    self.queue.commit(old, used, dropped=dropped)
    self.version = self.sched.version
    for g in used:
      self.passes.pop(g, None)
    record = metrics_lib.update_record(
        version=self.version,
        groups=groups,
        used=used,
        dropped=dropped,
        sums=jax.device_get(m),
        grad_norm=float(gnorm),
        busy_s=busy,
        wall_s=time.monotonic() - t0,
        max_token_age=self.cfg.loss.max_token_age,
        unrouted_rows=self._unrouted,
        adv_cfg=self.cfg.advantages,
        advantage_groups=self._advantage_groups(groups),
    )
    # Metrics before the checkpoint: a resume rolls metrics.jsonl back to
    # the checkpoint's version, so no update is listed twice or lost.
    self.metrics.write(record)
    snap = self._snapshot()
    self.state_file.write(snap)
    # The others wait for this command while process 0 commits and writes.
    self._command('save', version=self.version)
    self._save({'version': self.version, 'learner': snap})
