"""Learner updates from a real on-disk replay queue, with a crash."""

import dataclasses
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from search_agent.train.rl import learner_step
from search_agent.train.rl import replay_queue

sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
import replay_worker  # pylint: disable=g-import-not-at-top,wrong-import-position

V = 8


def _logprobs(w_vv, tokens_bt):
  logp = jax.nn.log_softmax(w_vv[tokens_bt[:, :-1]], axis=-1)
  lp = jnp.take_along_axis(logp, tokens_bt[:, 1:, None], axis=-1)[..., 0]
  return jnp.pad(lp, ((0, 0), (1, 0)))


def _fill(q, n):
  for i in range(n):
    item = {'group_id': f'q{i}@0', 'task_id': f'q{i}', 'batch': 0}
    g = replay_worker.make_group(item)
    # Sampled by the uniform policy the zero-initialized bigram model is.
    trajs = tuple(
        dataclasses.replace(
            t,
            tokens=dataclasses.replace(
                t.tokens,
                logprobs=(-np.log(V),) * len(t.tokens.token_ids),
                token_ids=tuple((x * (j + 1)) % V for x in t.tokens.token_ids),
            ),
        )
        for j, t in enumerate(g.trajectories)
    )
    q.deliver(dataclasses.replace(g, trajectories=trajs), 'w')


CFG = learner_step.LearnerConfig(
    groups_per_update=3,
    start_after_ready=2,
    seq_len=8,
    microbatch_size=4,
    poll_seconds=0.01,
    timeout_seconds=5,
)


def test_updates_commit_then_checkpoint_and_survive_a_crash(tmp_path):
  q = replay_queue.ReplayQueue(tmp_path)
  _fill(q, 6)
  opt = optax.sgd(0.5)
  w = jnp.zeros((V, V))
  state = learner_step.LearnerState(w, opt.init(w), 0)
  saved = []

  def save(s):
    if s.version == 2:
      raise OSError('disk full')  # crash after commit, before checkpoint
    saved.append(s)

  kw = dict(cfg=CFG, logprob_fn=_logprobs, optimizer=opt, save_checkpoint=save)
  state, m = learner_step.learner_update(state, q, **kw)
  assert state.version == 1 and len(m['groups']) == 3
  assert m['eligible_tokens'] == 3 * 4 * 4
  assert not np.allclose(state.params, w)
  with pytest.raises(OSError, match='disk full'):
    learner_step.learner_update(state, q, **kw)
  assert len(q.consumed()) == 6  # update 1 was journaled

  # Restart from the last checkpoint (version 1).
  q2 = replay_queue.ReplayQueue(tmp_path)
  assert len(q2.recover(checkpoint_step=saved[-1].version)) == 3
  state, _ = learner_step.learner_update(
      saved[-1], q2, **{**kw, 'save_checkpoint': saved.append}
  )
  assert state.version == 2
  used = q2.consumed()
  assert sorted(used.values()) == [0, 0, 0, 1, 1, 1]


def test_waiting_for_groups_times_out(tmp_path):
  q = replay_queue.ReplayQueue(tmp_path)
  _fill(q, 1)
  opt = optax.sgd(0.1)
  w = jnp.zeros((V, V))
  cfg = learner_step.LearnerConfig(
      groups_per_update=3,
      start_after_ready=2,
      seq_len=8,
      microbatch_size=4,
      poll_seconds=0.01,
      timeout_seconds=0.05,
  )
  with pytest.raises(TimeoutError, match='rollout workers'):
    learner_step.learner_update(
        learner_step.LearnerState(w, opt.init(w), 0),
        q,
        cfg=cfg,
        logprob_fn=_logprobs,
        optimizer=opt,
        save_checkpoint=lambda s: None,
    )


def test_groups_without_signal_are_dropped_not_counted(tmp_path):
  q = replay_queue.ReplayQueue(tmp_path)
  flat = replay_worker.make_group(
      {'group_id': 'flat@0', 'task_id': 'flat', 'batch': 0}
  )
  flat = dataclasses.replace(
      flat,
      trajectories=tuple(
          dataclasses.replace(t, reward=0.7) for t in flat.trajectories
      ),
  )
  q.deliver(flat, 'w')  # all four rewards equal: every advantage is zero
  _fill(q, 3)  # delivered after it: the first take holds the flat group
  opt = optax.sgd(0.5)
  w = jnp.zeros((V, V))
  cfg = dataclasses.replace(CFG, start_after_ready=1)
  state = learner_step.LearnerState(w, opt.init(w), 0)
  _, m = learner_step.learner_update(
      state,
      q,
      cfg=cfg,
      logprob_fn=_logprobs,
      optimizer=opt,
      save_checkpoint=lambda s: None,
  )
  # 3 groups with signal fill the update; the flat group's 16 eligible
  # tokens are not in the denominator (4 trajectories x 4 tokens each).
  assert sorted(m['groups']) == ['q0@0', 'q1@0', 'q2@0']
  assert m['dropped_groups'] == ['flat@0']
  assert m['eligible_tokens'] == 3 * 4 * 4
  restarted = replay_queue.ReplayQueue(tmp_path)
  assert restarted.dropped() == {'flat@0'} and restarted.ready_count() == 0
  assert restarted.recover(checkpoint_step=0) == sorted(
      ['flat@0', 'q0@0', 'q1@0', 'q2@0']
  )
