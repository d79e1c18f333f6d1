"""Microbatch rows split over the learner mesh's batch axes (row_placement).

The placed arrays hold distinct rows on each device, padding rows included;
one update of the real tiny MaxText MoE on 4 CPU devices gives the gradient
sums, metrics and step-0 parity figures of the replicated placement.
"""

import dataclasses

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import numpy as np
import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.train.rl import learner
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import parity
from search_agent.train.rl import policy_logprobs
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import row_placement

T = 32
AXES = ('data', 'fsdp', 'expert')


def _group(rng, gid, n_traj, *, vocab=50, routing=(2, 2), unrouted=()):
  """Random rollouts of one group; routing [n-1, layers, k] of distinct
  experts (of 4), none for the trajectories listed in `unrouted`."""
  trajs = []
  for i in range(n_traj):
    n = int(rng.integers(T // 2, T))
    prompt = int(rng.integers(2, 8))
    mask = (0,) * prompt + (1,) * (n - prompt)
    layers, k = routing
    r = np.argsort(rng.uniform(size=(n - 1, layers, 4)), -1)[..., :k]
    trajs.append(
        rollout_groups.ScoredTrajectory(
            trajectory_id=f'{gid}-{i}',
            segments=(
                traj_lib.TokenRecord(
                    token_ids=tuple(int(x) for x in rng.integers(3, vocab, n)),
                    loss_mask=mask,
                    logprobs=tuple(float(x) for x in -rng.uniform(0.5, 3, n)),
                    versions=tuple(0 if m else -1 for m in mask),
                    routed_experts=(
                        None if i in unrouted else r.astype(int).tolist()
                    ),
                ),
            ),
            reward=float(rng.uniform()),
        )
    )
  return rollout_groups.RolloutGroup(
      group_id=gid, task_id=gid, dispatch_batch=0, trajectories=tuple(trajs)
  )


def _mesh(devices=4):
  devs = np.array(jax.devices()[:devices]).reshape(1, 2, devices // 2)
  return jax.sharding.Mesh(devs, AXES)


def _rows_of(arr):
  """{device id: host rows it holds} of a global array."""
  return {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}


def test_padding_is_the_row_pack_update_fills_with():
  rng = np.random.default_rng(0)
  g = _group(rng, 'g', 3, unrouted=(2,))
  routed, plain = learner.pack_update([g], seq_len=T, batch_size=4)
  assert (routed.rows, plain.rows) == (2, 1)
  for mb in (routed, plain):
    fill = learner.padding(mb)
    for got, want in zip(
        jax.tree.leaves((mb.tokens_bt, mb.batch, mb.valid_bt, mb.routing_btlk)),
        jax.tree.leaves(
            (fill.tokens_bt, fill.batch, fill.valid_bt, fill.routing_btlk)
        ),
    ):
      assert got.dtype == want.dtype and want.shape[0] == 1
      for row in range(mb.rows, 4):  # the rows pack_update padded
        np.testing.assert_array_equal(got[row], want[0])
  assert plain.valid_bt is None and plain.routing_btlk is None
  padded = learner.pad_rows(routed, 8)
  assert padded.tokens_bt.shape == (8, T) and padded.rows == 2
  np.testing.assert_array_equal(padded.routing_btlk[:4], routed.routing_btlk)
  np.testing.assert_array_equal(
      padded.routing_btlk[7], np.broadcast_to([0, 1], (T, 2, 2))
  )
  assert (padded.batch.versions_bt[4:] == -1).all()


def test_rows_are_split_over_the_batch_axes_and_padded():
  rng = np.random.default_rng(1)
  (mb,) = learner.pack_update([_group(rng, 'g', 3)], seq_len=T, batch_size=3)
  place = row_placement.RowPlacement(_mesh(), AXES)
  assert place.shards == 4 and place.padded_rows(3) == 4
  assert 'padded to 4 rows' in place.describe(3)
  assert 'padded' not in place.describe(8)
  got = place.microbatch(mb)
  host = learner.pad_rows(mb, 4)
  for arr, want in zip(
      jax.tree.leaves((got.tokens_bt, got.batch, got.valid_bt,
                       got.routing_btlk)),
      jax.tree.leaves((host.tokens_bt, host.batch, host.valid_bt,
                       host.routing_btlk)),
  ):  # fmt: skip
    assert arr.shape == want.shape
    assert arr.sharding.spec == P(AXES)
    shards = _rows_of(arr)
    assert len(shards) == 4
    # Each device holds one distinct row: its own, in mesh order.
    for i, d in enumerate(place.mesh.devices.flat):
      np.testing.assert_array_equal(shards[d.id], want[i : i + 1])
  assert got.rows == 3
  # The padding row carries no loss, no version, experts 0..k-1.
  last = _rows_of(got.routing_btlk)[place.mesh.devices.flat[3].id]
  np.testing.assert_array_equal(last[0], np.broadcast_to([0, 1], (T, 2, 2)))

  # gathered(): rows in, a replicated result every process can read.
  fn = jax.jit(lambda p, t, valid_bt, routing_btlk: p * t + valid_bt)
  out = place.gathered(fn)(2, host.tokens_bt, **host.extras)
  assert out.sharding.is_fully_replicated
  np.testing.assert_array_equal(
      np.asarray(out), 2 * host.tokens_bt + host.valid_bt
  )
  with pytest.raises(ValueError, match='pad them first'):
    place.gathered(fn)(2, mb.tokens_bt, **mb.extras)


def test_batch_axes_are_the_activation_batch_rule():
  class _Model:
    mt_config = type('C', (), {'logical_axis_rules': [
        ['activation_length', ['context']],
        ['activation_batch', ['data', 'fsdp', 'expert']],
    ]})  # fmt: skip

  assert row_placement.batch_axes(_Model()) == AXES


# -- one update of the tiny MaxText MoE --------------------------------------


@pytest.fixture(scope='module')
def model():
  cfg = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=T, logits_chunk=16,
      freeze_router=True,
  )  # fmt: skip
  return maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:4],
      record_routing=True,
  )  # fmt: skip


def _replicated(mesh, mb):
  """The placement before row splitting: every array whole on each device."""
  rep = NamedSharding(mesh, P())

  def place(x):
    return jax.make_array_from_callback(x.shape, rep, lambda idx: x[idx])

  return dataclasses.replace(
      mb,
      tokens_bt=place(mb.tokens_bt),
      batch=jax.tree.map(place, mb.batch),
      valid_bt=None if mb.valid_bt is None else place(mb.valid_bt),
      routing_btlk=None if mb.routing_btlk is None else place(mb.routing_btlk),
  )


def _max_diff(a, b):
  return max(
      float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a),
                                                     jax.tree.leaves(b))
  )  # fmt: skip


@pytest.mark.maxtext
@pytest.mark.slow
def test_one_update_equals_the_replicated_placement(model):
  """5 routed rows in microbatches of 3 (3 and 2 rows, each padded to 4)
  and 1 unrouted row (padded to 4) on 4 batch shards."""
  rng = np.random.default_rng(2)
  groups = [
      _group(rng, 'a', 3, vocab=4000, unrouted=(1,)),
      _group(rng, 'b', 3, vocab=4000),
  ]
  mbs = learner.pack_update(groups, seq_len=T, batch_size=3)
  assert [(mb.rows, mb.routing_btlk is None) for mb in mbs] == [
      (3, False), (2, False), (1, True)]  # fmt: skip
  fn = policy_logprobs.jitted_logprobs(model)
  # Sampling logprobs near the policy's, so IcePop keeps most tokens.
  for i, mb in enumerate(mbs):
    lp = np.asarray(fn(model.params, mb.tokens_bt, **mb.extras))
    gen = mb.batch.versions_bt >= 0
    noisy = lp + rng.uniform(-0.3, 0.3, lp.shape).astype(np.float32)
    mbs[i] = dataclasses.replace(
        mb,
        batch=mb.batch._replace(gen_logprobs_bt=np.where(gen, noisy, 0.0)),
    )

  place = row_placement.RowPlacement.of_model(model)
  assert place.axes == AXES and place.shards == 4
  cfg = loss_lib.PolicyLossConfig()
  logprob_fn = policy_logprobs.make_logprob_fn(model)
  placed = [place.microbatch(mb) for mb in mbs]
  for mb, host in zip(placed, mbs):
    assert mb.tokens_bt.sharding.spec == P(AXES)
    rows = _rows_of(mb.tokens_bt)  # one row per device, in mesh order
    want = place.pad(host).tokens_bt
    assert want.shape[0] == 4 and len(rows) == 4
    for i, d in enumerate(model.mesh.devices.flat):
      np.testing.assert_array_equal(rows[d.id], want[i : i + 1])
  results = []
  for mb_list in ([_replicated(model.mesh, mb) for mb in mbs], placed):
    acc = learner.GradientSums(logprob_fn, cfg)
    with model.rules():
      acc.add(model.params, mb_list, version=0)
    grads, metrics = acc.result()
    results.append((grads, metrics, acc.sums))
  (g_rep, m_rep, s_rep), (g_row, m_row, s_row) = results

  assert float(s_row.tokens) == float(s_rep.tokens) > 0
  np.testing.assert_array_equal(s_row.age_hist, s_rep.age_hist)
  assert float(m_rep['icepop_mask_rate']) < 0.5
  scale = max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(g_rep))
  grad_diff = _max_diff(g_row, g_rep)
  metric_diff = _max_diff(m_row, m_rep)
  sums_diff = _max_diff(s_row, s_rep)
  print(
      f'row-split vs replicated: max |grad diff| {grad_diff:.3e} (max |grad|'
      f' {scale:.3e}), max |metric diff| {metric_diff:.3e}, max |sum diff|'
      f' {sums_diff:.3e}'
  )
  assert scale > 0
  assert grad_diff <= 1e-5 * scale
  assert metric_diff <= 1e-5
  assert sums_diff <= 1e-4 * max(1.0, abs(float(s_rep.objective)))

  # Step-0 parity as the loop runs it: padded rows split, logprobs gathered.
  want = parity.measure(fn, model.params, mbs, cfg)
  got = parity.measure(
      place.gathered(fn), model.params, [place.pad(mb) for mb in mbs], cfg
  )
  print(f'parity replicated {want}\nparity row-split {got}')
  for k in ('tokens', 'routing_recorded', 'routing_nonzero_entries'):
    assert got[k] == want[k]
  for k in ('max_abs_logprob_diff', 'mean_abs_logprob_diff',
            'icepop_mask_rate'):  # fmt: skip
    assert got[k] == pytest.approx(want[k], abs=1e-5)
