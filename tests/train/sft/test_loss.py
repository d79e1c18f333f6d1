"""The seed's SFT loss by hand, and microbatch accumulation == full update."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import families
from search_agent.model import maxtext_model
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
