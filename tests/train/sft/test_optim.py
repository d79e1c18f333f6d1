"""Muon as the recipe sets it, mapped onto optax.contrib.muon."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.train import optim


def test_muon_axes_from_logical_names():
  dims = optim.muon_dims
  wi = dims(('exp', 'layers', 'embed_moe', 'mlp_moe'))
  assert (wi.reduction_axis, wi.output_axis) == ((2,), (3,))
  wo = dims(('exp', 'layers', 'mlp_moe', 'embed_moe'))
  assert (wo.reduction_axis, wo.output_axis) == ((2,), (3,))
  q = dims(('embed_attn', 'layers', 'q_heads', 'kv'))
  assert (q.reduction_axis, q.output_axis) == ((0,), (2, 3))
  out = dims(('heads', 'layers', 'kv', 'embed_attn'))
  assert (out.reduction_axis, out.output_axis) == ((0, 2), (3,))
  # Embeddings, LM head, router and vectors go to AdamW.
  assert dims(('vocab', 'embed_vocab')) is None
  assert dims(('embed_vocab', 'vocab')) is None
  assert dims(('embed', 'layers', None)) is None
  assert dims(('norm', 'layers')) is None


def _first_update(spectral_scale, lr=0.1):
  g = jax.random.normal(jax.random.PRNGKey(0), (16, 32))
  params = {'w': jnp.zeros((16, 32))}
  cfg = optim.OptimizerConfig(spectral_scale=spectral_scale)
  tx = optim.make_optimizer(cfg, lr, params, {'w': ('embed', 'mlp')})
  updates, _ = tx.update({'w': g}, tx.init(params), params)
  return np.asarray(updates['w'])


def test_spectral_scaling_multiplier():
  lr = 0.1
  u = _first_update(0.2, lr)
  # consistent_rms: scale sqrt(max(fan_in, fan_out)) * 0.2 = sqrt(32) * 0.2.
  s = np.linalg.svd(-u / (lr * 0.2 * np.sqrt(32)), compute_uv=False)
  # Newton-Schulz (5 quintic steps) leaves singular values near 1.
  assert 0.5 < s.min() and s.max() < 1.25
  # optax's default width scaling would be sqrt(max(1, 32 / 16)).
  np.testing.assert_allclose(
      u / _first_update(0.0, lr), 0.2 * np.sqrt(32) / np.sqrt(2), rtol=1e-5
  )


def test_weight_decay_and_errors():
  params = {'w': jnp.ones((4, 4))}
  cfg = optim.OptimizerConfig(weight_decay=0.1)
  tx = optim.make_optimizer(cfg, 0.5, params, {'w': ('embed', 'mlp')})
  zero = {'w': jnp.zeros((4, 4))}
  updates, _ = tx.update(zero, tx.init(params), params)
  # Zero gradient: only decoupled decay, lr * wd * w = 0.05.
  np.testing.assert_allclose(updates['w'], -0.05 * np.ones((4, 4)), rtol=1e-5)
  with pytest.raises(optim.OptimizerConfigError, match='unknown'):
    optim.make_optimizer(
        optim.OptimizerConfig(name='sgd'), 0.1, params, {'w': ('a', 'b')}
    )
  with pytest.raises(optim.OptimizerConfigError, match='match no parameter'):
    optim.make_optimizer(
        optim.OptimizerConfig(frozen=('nothing',)), 0.1, params, {'w': ('a',)}
    )
