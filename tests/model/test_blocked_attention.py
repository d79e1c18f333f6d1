"""Blocked packed-row attention equals MaxText's masked dot-product one."""

import dataclasses

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import blocked_attention
from search_agent.model import families
from search_agent.model import logprobs
from search_agent.model import maxtext_model
from search_agent.train.sft import step as step_lib


def _reference(q, k, v, seg):
  """Full T x T softmax with MaxText's mask: causal and same segment."""
  b, t, n, d = q.shape
  kv = k.shape[2]
  qq = q.reshape(b, t, kv, n // kv, d)
  s = jnp.einsum('btkgd,bskd->bkgts', qq, k)
  mask = (seg[:, :, None] == seg[:, None, :]) & jnp.tril(jnp.ones((t, t), bool))
  s = jnp.where(mask[:, None, None], s, blocked_attention.MASK_VALUE)
  p = jax.nn.softmax(s, axis=-1)
  return jnp.einsum('bkgts,bskd->btkgd', p, v).reshape(b, t, n, d)


def _packed(t, lengths, b=2, n=4, kv=2, d=8, seed=0):
  """Random q/k/v and segment ids: segments of `lengths`, then padding 0."""
  r = np.random.default_rng(seed)
  seg = np.zeros((b, t), np.int32)
  for row in range(b):
    at = 0
    for i, length in enumerate(np.roll(lengths, row)):
      seg[row, at : at + length] = i + 1
      at += length
  qkv = [
      jnp.asarray(r.normal(size=(b, t, h, d)), jnp.float32) for h in (n, kv, kv)
  ]
  return (*qkv, jnp.asarray(seg))


@pytest.mark.parametrize(
    't,block,lengths',
    [
        (64, 16, [20, 3, 30]),  # padding at the end, blocks skipped
        (64, 16, [64]),  # one segment over every block
        (50, 16, [7, 25, 9]),  # length not a multiple of the block
        (32, 64, [10, 12]),  # one block covers the row
    ],
)
def test_values_and_grads_match_full_masked_softmax(t, block, lengths):
  q, k, v, seg = _packed(t, lengths)
  w = jax.random.normal(jax.random.PRNGKey(3), q.shape)
  ours = lambda q, k, v: blocked_attention.blocked_causal_attention(
      q, k, v, seg, block
  )
  ref = lambda q, k, v: _reference(q, k, v, seg)
  np.testing.assert_allclose(ours(q, k, v), ref(q, k, v), atol=2e-6)
  grad = lambda f: jax.grad(lambda *x: jnp.sum(f(*x) * w), argnums=(0, 1, 2))(
      q, k, v
  )
  for a, b in zip(grad(ours), grad(ref)):
    np.testing.assert_allclose(a, b, atol=1e-5)


def _skipped_pairs(fn, *args) -> int:
  """Number of lax.cond in the traced function, nested ones included."""

  def count(jx):
    n = 0
    for e in jx.eqns:
      n += e.primitive.name == 'cond'
      for v in e.params.values():
        for sub in v if isinstance(v, (tuple, list)) else (v,):
          if isinstance(sub, jax.extend.core.ClosedJaxpr):
            n += count(sub.jaxpr)
          elif isinstance(sub, jax.extend.core.Jaxpr):
            n += count(sub)
    return n

  return count(jax.make_jaxpr(fn)(*args).jaxpr)


def test_off_diagonal_offsets_are_conditional():
  q, k, v, seg = _packed(64, [20, 3, 30])
  fn = lambda q, k, v: blocked_attention.blocked_causal_attention(
      q, k, v, seg, 16
  )
  assert _skipped_pairs(fn, q, k, v) == 3  # offsets 1..3 of 4 blocks


@pytest.mark.maxtext
@pytest.mark.slow
def test_sft_step_loss_and_grads_unchanged_in_the_tiny_model():
  """One SFT update's loss and gradients: MaxText's attention vs ours.

  The tiny MoE at 128 positions, packed segments and padding, blocks of 32,
  and logits kept for the backward (`logits_remat=False`) in the fast one.
  """
  base = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=128, logits_chunk=32
  )
  fast = dataclasses.replace(base, attention_block=32, logits_remat=False)
  layout = families.layout_preset('fsdp')
  devices = jax.devices()[:1]
  r = np.random.default_rng(0)
  seg = np.zeros((2, 1, 128), np.int32)
  pos = np.zeros((2, 1, 128), np.int32)
  for m, lengths in enumerate(([40, 50, 20], [128])):
    at = 0
    for i, length in enumerate(lengths):
      seg[m, 0, at : at + length] = i + 1
      pos[m, 0, at : at + length] = np.arange(length)
      at += length
  batch = {
      'inputs': r.integers(0, 4096, (2, 1, 128)).astype(np.int32),
      'targets': r.integers(0, 4096, (2, 1, 128)).astype(np.int32),
      'positions': pos,
      'segment_ids': seg,
      'loss_mask': (seg > 0).astype(np.int32),
  }
  out, conds = {}, {}
  for name, cfg in (('maxtext', base), ('blocked', fast)):
    model = maxtext_model.build(cfg, layout, devices=devices)
    with model.rules():
      conds[name] = _skipped_pairs(
          lambda p, model=model: step_lib.accumulate_grads(
              model, p, batch, 0.0
          ),
          model.params,
      )
      grads, metrics = jax.jit(
          lambda p, b, model=model: step_lib.accumulate_grads(model, p, b, 0.0)
      )(model.params, batch)
      lp, _ = jax.jit(
          lambda p, model=model: logprobs.token_logprobs(
              model,
              p,
              batch['inputs'][0],
              batch['positions'][0],
              batch['segment_ids'][0],
              batch['targets'][0],
          )
      )(model.params)
    out[name] = (float(metrics['nll']), grads, lp)
  # MaxText's attention has no cond; ours one per off-diagonal offset.
  assert conds['maxtext'] == 0 and conds['blocked'] > 0
  (nll_a, g_a, lp_a), (nll_b, g_b, lp_b) = out['maxtext'], out['blocked']
  assert nll_b == pytest.approx(nll_a, rel=1e-6)
  real = batch['segment_ids'][0] > 0
  np.testing.assert_allclose(
      np.asarray(lp_b)[real], np.asarray(lp_a)[real], atol=1e-5
  )
  for a, b in zip(jax.tree.leaves(g_a), jax.tree.leaves(g_b)):
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_kept_logits_give_the_same_logprobs_and_grads():
  w = jax.random.normal(jax.random.PRNGKey(1), (8, 50)) * 0.5
  h = jax.random.normal(jax.random.PRNGKey(0), (2, 19, 8))
  y = jax.random.randint(jax.random.PRNGKey(2), (2, 19), 0, 50)

  def loss(w, remat):
    lp = logprobs.chunked_token_logprobs(lambda x: x @ w, h, y, 4, remat)
    return jnp.sum(lp * jnp.arange(19))

  np.testing.assert_allclose(loss(w, False), loss(w, True), rtol=1e-6)
  np.testing.assert_allclose(
      jax.grad(loss)(w, False), jax.grad(loss)(w, True), rtol=1e-5
  )
