"""One learner update from the durable replay queue.

Ready-first on the learner side, by the scheduler's own rule
(`scheduler.chunk_size`): wait until `start_after_ready` groups (or all the
update still lacks) are in the queue, compute their gradient SUMS,
repeat until the update holds `groups_per_update` groups, divide once, apply
the optimizer, journal the groups (commit) and only then save the
checkpoint. After a crash, restart from checkpoint s and call
`queue.recover(checkpoint_step=s)`: groups of uncheckpointed updates are
offered again, so every group lands in exactly one applied update.
Dynamic sampling: a taken group whose advantages are all zero is excluded
from the update (not packed, not counted towards `groups_per_update`, its
tokens not in the denominator) and journaled as dropped, so it is never
offered again. Workers may drop such groups before delivery too.
"""

import dataclasses
import time
from typing import Any, Callable, NamedTuple

import jax
import optax

from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import learner
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import replay_queue
from search_agent.train.rl import scheduler as sched_lib


class LearnerState(NamedTuple):
  """What a checkpoint holds: parameters, optimizer state, policy version."""

  params: Any
  opt_state: Any
  version: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class LearnerConfig:
  """Learner update settings.

  Attributes:
    groups_per_update: Groups in one optimizer update (32 in the recipe).
    start_after_ready: Ready groups needed before a gradient chunk.
    seq_len: Packed sequence length (longer trajectories are an error).
    microbatch_size: Trajectories per microbatch.
    poll_seconds: Queue polling interval while waiting for groups.
    timeout_seconds: Longest wait for one chunk before TimeoutError.
    loss: Policy loss constants.
    advantages: Advantage settings.
  """

  groups_per_update: int = 32
  start_after_ready: int = 8
  seq_len: int
  microbatch_size: int
  poll_seconds: float = 1.0
  timeout_seconds: float = 3600.0
  loss: loss_lib.PolicyLossConfig = loss_lib.PolicyLossConfig()
  advantages: adv_lib.AdvantageConfig = adv_lib.AdvantageConfig()


def _wait_for(queue, accumulated: int, rule, cfg: LearnerConfig) -> int:
  """Waits until the scheduler's ready-first rule allows a chunk; its size."""
  deadline = time.monotonic() + cfg.timeout_seconds
  while not (n := sched_lib.chunk_size(queue.ready_count(), accumulated, rule)):
    if time.monotonic() > deadline:
      raise TimeoutError(
          f'waited {cfg.timeout_seconds}s for ready groups; are the'
          ' rollout workers alive?'
      )
    time.sleep(cfg.poll_seconds)
  return n


def learner_update(
    state: LearnerState,
    queue: replay_queue.ReplayQueue,
    *,
    cfg: LearnerConfig,
    logprob_fn: learner.LogprobFn,
    optimizer: optax.GradientTransformation,
    save_checkpoint: Callable[[LearnerState], None],
    ref_params: Any = None,
) -> tuple[LearnerState, dict[str, Any]]:
  """Assembles, applies, commits and checkpoints one update."""
  acc = learner.GradientSums(logprob_fn, cfg.loss)
  used: list[str] = []
  dropped: list[str] = []
  rule = sched_lib.SchedulerConfig(
      groups_per_update=cfg.groups_per_update,
      start_after_ready=cfg.start_after_ready,
  )
  while len(used) < cfg.groups_per_update:
    n = _wait_for(queue, len(used), rule, cfg)
    groups, no_signal = adv_lib.keep_groups(queue.take(n), cfg.advantages)
    dropped.extend(g.group_id for g in no_signal)
    if not groups:
      continue
    mbs = learner.pack_update(
        groups,
        seq_len=cfg.seq_len,
        batch_size=cfg.microbatch_size,
        adv_cfg=cfg.advantages,
    )
    acc.add(state.params, mbs, state.version, ref_params)
    used.extend(g.group_id for g in groups)
  grads, metrics = acc.result()
  updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
  params = optax.apply_updates(state.params, updates)
  # Commit before the checkpoint: see the module doc.
  queue.commit(state.version, used, dropped=dropped)
  new_state = LearnerState(params, opt_state, state.version + 1)
  save_checkpoint(new_state)
  metrics = jax.tree.map(jax.device_get, metrics)
  metrics['groups'] = used
  metrics['dropped_groups'] = dropped
  return new_state, metrics
