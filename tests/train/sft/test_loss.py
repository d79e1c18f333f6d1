"""The seed's SFT loss by hand, and microbatch accumulation == full update."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.train import data as data_lib
from search_agent.train.sft import loss as loss_lib
from search_agent.train.sft import step as step_lib


def test_hand_worked_sft_loss():
  # Two trajectories in one update. Eligible tokens: 2 in the first (log p =
  # log 0.5, log 0.25), 1 in the second (log p = log 0.8); masked tokens
  # (system/tool) do not count.
  logp = jnp.log(jnp.array([[0.5, 0.1, 0.25, 0.9], [0.3, 0.8, 0.2, 0.2]]))
  mask = jnp.array([[1, 0, 1, 0], [0, 1, 0, 0]])
  expected = -(np.log(0.5) + np.log(0.25) + np.log(0.8)) / 3
  assert float(loss_lib.sft_loss(logp, mask)) == pytest.approx(expected)
  # A per-trajectory mean would give a different (wrong) value.
  per_traj = -((np.log(0.5) + np.log(0.25)) / 2 + np.log(0.8)) / 2
  assert expected != pytest.approx(per_traj)
  assert float(loss_lib.masked_nll_sum(logp, mask)) == pytest.approx(
      3 * expected
  )
  assert float(loss_lib.sft_loss(logp, jnp.zeros_like(mask))) == 0.0


@pytest.fixture(scope='module')
def model():
  cfg = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=128, logits_chunk=32
  )
  return maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )


@pytest.mark.maxtext
def test_microbatch_split_gives_the_full_update_gradient(model):
  rng = np.random.default_rng(0)
  rows, t = 4, 128
  # Rows with very different numbers of eligible tokens.
  mask = np.zeros((rows, t), np.int32)
  for r, n in enumerate([100, 3, 40, 0]):
    mask[r, :n] = 1
  full = {
      'inputs': rng.integers(0, 4096, (rows, t)),
      'targets': rng.integers(0, 4096, (rows, t)),
      'positions': np.broadcast_to(np.arange(t), (rows, t)),
      'segment_ids': np.ones((rows, t)),
      'loss_mask': mask,
  }
  full = {k: np.asarray(v, np.int32) for k, v in full.items()}

  def grads(split):
    batch = {k: v.reshape((split, rows // split, t)) for k, v in full.items()}
    with model.rules():
      fn = jax.jit(lambda p, b: step_lib.accumulate_grads(model, p, b, 0.0))
      return jax.device_get(fn(model.params, batch))

  g1, m1 = grads(1)
  g2, m2 = grads(2)
  g4, m4 = grads(4)
  assert m1['tokens'] == m2['tokens'] == m4['tokens'] == 143
  np.testing.assert_allclose(m4['nll'], m1['nll'], rtol=1e-6)
  for g in (g2, g4):
    for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(g1)):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)


def test_score_index_by_hand():
  # Row 0 supervises positions 1, 2 and 5; row 1 only 0; row 2 nothing.
  mask = np.array(
      [[0, 1, 1, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [0] * 8], np.int32
  )
  # The most supervised in a row is 3: S = 4 with multiple 2, supervised
  # positions first, then the unsupervised ones in order.
  index = data_lib.score_index(mask, 2)
  assert index.dtype == np.int32
  assert index.tolist() == [[1, 2, 5, 0], [0, 1, 2, 3], [0, 1, 2, 3]]
  # Gathering the mask keeps every supervised position exactly once.
  assert np.take_along_axis(mask, index, -1).sum(-1).tolist() == [3, 1, 0]
  # Nothing to save when S would reach the row length.
  assert data_lib.score_index(mask, 8) is None
  assert data_lib.score_index(np.ones((2, 8), np.int32), 3) is None
  with pytest.raises(ValueError, match='loss_positions_multiple'):
    data_lib.DataConfig(train_path='x', seq_len=8, loss_positions_multiple=-1)


@pytest.mark.maxtext
def test_scoring_only_supervised_positions_gives_the_same_update(model):
  """The head run on gathered supervised positions: same loss, same grads."""
  rng = np.random.default_rng(1)
  m, rows, t = 2, 2, 128
  mask = np.zeros((m, rows, t), np.int32)
  mask[0, 0, 10:40] = 1
  mask[0, 1, 100:128] = 1
  mask[1, 0, 5:9] = 1
  mask[1, 0, 70:90] = 1
  segments = np.where(np.arange(t) < 60, 1, 2)
  batch = {
      'inputs': rng.integers(0, 4096, (m, rows, t)),
      'targets': rng.integers(0, 4096, (m, rows, t)),
      'positions': np.where(segments == 1, np.arange(t), np.arange(t) - 60),
      'segment_ids': np.broadcast_to(segments, (m, rows, t)),
      'loss_mask': mask,
  }
  batch = {
      k: np.asarray(np.broadcast_to(v, (m, rows, t)), np.int32)
      for k, v in batch.items()
  }
  gathered = dict(batch, score_index=data_lib.score_index(mask, 16))
  assert gathered['score_index'].shape == (m, rows, 32)

  def run(b):
    with model.rules():
      g, metrics = jax.jit(
          lambda p, b: step_lib.accumulate_grads(model, p, b, 0.0)
      )(model.params, b)
      evaluated = step_lib.make_eval_step(model)(model.params, b)
    return jax.device_get((g, metrics, evaluated))

  g_full, m_full, e_full = run(batch)
  g_gath, m_gath, e_gath = run(gathered)
  assert m_full['tokens'] == m_gath['tokens'] == 82
  np.testing.assert_allclose(m_gath['nll'], m_full['nll'], rtol=1e-6)
  np.testing.assert_allclose(e_gath[0], e_full[0], rtol=1e-6)
  assert e_gath[1] == e_full[1] == 82
  for a, b in zip(jax.tree.leaves(g_gath), jax.tree.leaves(g_full)):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-7)
  # A wrong index (unsupervised positions) changes the loss: the gathered
  # path really scores what the index names.
  wrong = dict(gathered, score_index=(gathered['score_index'] + 1) % t)
  _, m_wrong, _ = run(wrong)
  assert abs(float(m_wrong['nll']) - float(m_full['nll'])) > 1e-3
