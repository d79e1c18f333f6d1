"""Packing groups and accumulating one update over microbatches."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import learner
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import token_exact

V = 7


def _logprobs(w_vv, tokens_bt):
  logp = jax.nn.log_softmax(w_vv[tokens_bt[:, :-1]], axis=-1)
  lp = jnp.take_along_axis(logp, tokens_bt[:, 1:, None], axis=-1)[..., 0]
  return jnp.pad(lp, ((0, 0), (1, 0)))


def _groups(rng, n_groups=3, size=4):
  out = []
  for g in range(n_groups):
    trajs = []
    for i in range(size):
      n = int(rng.integers(3, 12))  # different lengths on purpose
      mask = (0, 0) + tuple(int(x) for x in rng.integers(0, 2, n - 2))
      trajs.append(
          rollout_groups.ScoredTrajectory(
              trajectory_id=f'{g}-{i}',
              segments=(
                  traj_lib.TokenRecord(
                      token_ids=tuple(int(x) for x in rng.integers(0, V, n)),
                      loss_mask=mask,
                      logprobs=tuple(float(x) for x in -rng.uniform(0.5, 3, n)),
                      versions=tuple(int(x) for x in rng.integers(0, 4, n)),
                  ),
              ),
              reward=float(rng.uniform()),
          )
      )
    out.append(
        rollout_groups.RolloutGroup(
            group_id=f'g{g}',
            task_id=f't{g}',
            dispatch_batch=g,
            trajectories=tuple(trajs),
        )
    )
  return out


def test_accumulation_equals_one_big_batch_and_differs_from_mean_of_means():
  rng = np.random.default_rng(1)
  groups = _groups(rng)
  w = jnp.asarray(rng.normal(size=(V, V)), jnp.float32)
  big = learner.pack_update(groups, seq_len=12, batch_size=12)
  small = learner.pack_update(groups, seq_len=12, batch_size=2)
  assert len(big) == 1 and len(small) == 6
  g_big, m_big = learner.update_gradients(_logprobs, w, big, version=4)
  g_small, m_small = learner.update_gradients(_logprobs, w, small, version=4)
  np.testing.assert_allclose(g_big, g_small, atol=1e-6)
  assert float(m_big['loss']) == pytest.approx(float(m_small['loss']), 1e-5)
  assert float(m_big['eligible_tokens']) == float(m_small['eligible_tokens'])
  # Averaging per-microbatch normalized gradients would weigh tokens unevenly.
  per_mb = [
      learner.update_gradients(_logprobs, w, [mb], version=4)[0] for mb in small
  ]
  assert not np.allclose(np.mean(per_mb, axis=0), g_big, atol=1e-4)


def test_pack_update_layout_and_advantages():
  rng = np.random.default_rng(2)
  groups = _groups(rng, n_groups=1)
  (mb,) = learner.pack_update(groups, seq_len=12, batch_size=4)
  r = np.array(groups[0].rewards)
  np.testing.assert_allclose(mb.batch.advantages_b, r - r.mean(), rtol=1e-5)
  (first,) = groups[0].trajectories[0].segments
  n = len(first.token_ids)
  assert tuple(mb.tokens_bt[0, :n]) == first.token_ids
  assert (mb.batch.versions_bt[0, n:] == -1).all()
  assert (mb.batch.loss_mask_bt[0, n:] == 0).all()


def test_too_long_trajectory_is_an_error():
  groups = _groups(np.random.default_rng(3), n_groups=1)
  with pytest.raises(learner.SequenceTooLongError, match='seq_len'):
    learner.pack_update(groups, seq_len=2, batch_size=4)


def test_grpo_clip_matches_icepop_on_policy():
  """On-policy (ratio 1) at the reference, both objectives share a gradient."""
  rng = np.random.default_rng(4)
  w = jnp.asarray(rng.normal(size=(V, V)), jnp.float32)
  groups = _groups(rng, n_groups=2)
  mbs = learner.pack_update(groups, seq_len=12, batch_size=4)
  on_policy = []
  for mb in mbs:
    lp = np.asarray(_logprobs(w, jnp.asarray(mb.tokens_bt)))
    on_policy.append(
        learner.Microbatch(
            tokens_bt=mb.tokens_bt, batch=mb.batch._replace(gen_logprobs_bt=lp)
        )
    )
  g_ice, _ = learner.update_gradients(_logprobs, w, on_policy, version=3)
  cfg = loss_lib.PolicyLossConfig(objective='grpo_clip', kl_coef=0.001)
  g_clip, _ = learner.update_gradients(
      _logprobs, w, on_policy, version=3, cfg=cfg, ref_params=w
  )
  np.testing.assert_allclose(g_clip, g_ice, atol=1e-5)
  with pytest.raises(ValueError, match='ref_params'):
    learner.update_gradients(_logprobs, w, on_policy, version=3, cfg=cfg)


def test_a_slid_trajectory_trains_every_segment_with_its_advantage():
  """A rollout whose window slid is two segments: two rows, both with the
  rollout's advantage; the others pack exactly as before."""
  rng = np.random.default_rng(5)
  (g,) = _groups(rng, n_groups=1)
  first = g.trajectories[0]
  (seg,) = first.segments
  second = traj_lib.TokenRecord(
      token_ids=seg.token_ids[:2] + (5, 6),
      loss_mask=(0, 0, 1, 1),
      logprobs=(0.0, 0.0, -1.0, -2.0),
      versions=(-1, -1, 3, 3),
  )
  slid = rollout_groups.RolloutGroup(
      group_id=g.group_id,
      task_id=g.task_id,
      dispatch_batch=g.dispatch_batch,
      trajectories=(
          dataclasses.replace(first, segments=(seg, second)),
          *g.trajectories[1:],
      ),
  )
  assert slid.trajectories[0].slid
  (plain,) = learner.pack_update([g], seq_len=12, batch_size=8)
  (mb,) = learner.pack_update([slid], seq_len=12, batch_size=8)
  adv = np.asarray(mb.batch.advantages_b)
  assert adv[0] == adv[1] == np.asarray(plain.batch.advantages_b)[0]
  np.testing.assert_array_equal(mb.tokens_bt[1, :4], second.token_ids)
  # The other rollouts' rows are unchanged, one row later.
  np.testing.assert_array_equal(mb.tokens_bt[2:5], plain.tokens_bt[1:4])
  np.testing.assert_array_equal(
      adv[2:5], np.asarray(plain.batch.advantages_b)[1:4]
  )
  # Round trip through the queue's JSON keeps the segments.
  again = rollout_groups.RolloutGroup.from_json(slid.to_json())
  assert again.trajectories[0].segments == (seg, second)


def _with_routing(groups, lacking: str):
  """`groups` with a [n, 1 layer, 2 experts] routing record on every
  trajectory but `lacking`."""
  out = []
  for g in groups:
    trajs = []
    for t in g.trajectories:
      (seg,) = t.segments
      n = len(seg.token_ids)
      r = np.stack([np.arange(n) % 3, (np.arange(n) + 1) % 3], -1)[:, None]
      tokens = dataclasses.replace(
          seg,
          routed_experts=(
              None
              if t.trajectory_id == lacking
              else token_exact.encode_routing(r.astype(np.int32))
          ),
      )
      trajs.append(dataclasses.replace(t, segments=(tokens,)))
    out.append(dataclasses.replace(g, trajectories=tuple(trajs)))
  return out


def test_one_trajectory_without_routing_keeps_replay_for_the_others():
  groups = _with_routing(_groups(np.random.default_rng(5)), lacking='1-2')
  mbs = learner.pack_update(groups, seq_len=12, batch_size=4)
  routed = [mb for mb in mbs if mb.routing_btlk is not None]
  plain = [mb for mb in mbs if mb.routing_btlk is None]
  # 11 of 12 rows replay their experts; the one without a record does not.
  assert sum(mb.rows for mb in routed) == 11
  assert [mb.rows for mb in plain] == [1]
  assert learner.unrouted_rows(mbs) == 1
  assert plain[0].valid_bt is None and not plain[0].extras
  # The unrouted row is the lacking trajectory, its tokens intact.
  (lacking,) = groups[1].trajectories[2].segments
  n = len(lacking.token_ids)
  assert tuple(plain[0].tokens_bt[0, :n]) == lacking.token_ids
  # Every routed row carries its own record.
  (first,) = groups[0].trajectories[0].segments
  want = token_exact.decode_routing(first.routed_experts)
  np.testing.assert_array_equal(
      routed[0].routing_btlk[0, : want.shape[0]], want
  )
  # Packing per row changes nothing in the update's sums (same rows, same
  # advantages): the objective equals the all-plain packing's.
  w = jnp.asarray(np.random.default_rng(6).normal(size=(V, V)), jnp.float32)

  def logprobs(w_vv, tokens_bt, valid_bt=None, routing_btlk=None):
    del valid_bt, routing_btlk
    return _logprobs(w_vv, tokens_bt)

  g_rows, m_rows = learner.update_gradients(logprobs, w, mbs, version=4)
  g_all, m_all = learner.update_gradients(
      logprobs,
      w,
      learner.pack_update(_groups(np.random.default_rng(5)), seq_len=12,
                          batch_size=4),
      version=4,
  )  # fmt: skip
  np.testing.assert_allclose(g_rows, g_all, atol=1e-6)
  assert float(m_rows['loss']) == pytest.approx(float(m_all['loss']), 1e-5)
