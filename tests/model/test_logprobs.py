"""Chunked per-token log-probs: exact, and never length x vocab in memory."""

import functools

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import logprobs
from search_agent.model import maxtext_model


def _reference(logits_fn, h, y):
  logp = jax.nn.log_softmax(logits_fn(h).astype(jnp.float32), axis=-1)
  return jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]


def _linear_head(v=50, d=8):
  w = jax.random.normal(jax.random.PRNGKey(1), (d, v)) * 0.5
  return w, lambda h, w=w: h @ w


def test_hand_worked_two_token_vocab():
  # logits [0, log 3] -> p = [1/4, 3/4]; targets 1, 0.
  h = jnp.array([[[0.0], [0.0]]])
  fn = lambda h: h + jnp.array([0.0, np.log(3.0)])
  lp = logprobs.chunked_token_logprobs(fn, h, jnp.array([[1, 0]]), chunk=1)
  np.testing.assert_allclose(lp, [[np.log(0.75), np.log(0.25)]], rtol=1e-6)


def test_hand_worked_temperature():
  # logits [0, 2 log 3] at T = 2 -> [0, log 3] -> p = [1/4, 3/4]; T <= 0
  # (greedy) scores the raw logits: p = [1/10, 9/10].
  h = jnp.array([[[0.0], [0.0]]])
  fn = lambda h: h + jnp.array([0.0, 2 * np.log(3.0)])
  y = jnp.array([[1, 0]])
  hot = logprobs.chunked_token_logprobs(fn, h, y, chunk=1, temperature=2.0)
  np.testing.assert_allclose(hot, [[np.log(0.75), np.log(0.25)]], rtol=1e-6)
  raw = logprobs.chunked_token_logprobs(fn, h, y, chunk=1, temperature=0.0)
  np.testing.assert_allclose(raw, [[np.log(0.9), np.log(0.1)]], rtol=1e-6)


@pytest.mark.parametrize('chunk', [1, 4, 7, 64])
def test_matches_full_softmax_values_and_grads(chunk):
  w, _ = _linear_head()
  h = jax.random.normal(jax.random.PRNGKey(0), (2, 19, 8))
  y = jax.random.randint(jax.random.PRNGKey(2), (2, 19), 0, 50)

  def loss(w, f):
    return jnp.sum(f(lambda x: x @ w, h, y) * jnp.arange(19))

  ours = functools.partial(logprobs.chunked_token_logprobs, chunk=chunk)
  np.testing.assert_allclose(
      ours(lambda x: x @ w, h, y), _reference(lambda x: x @ w, h, y), rtol=1e-5
  )
  np.testing.assert_allclose(
      jax.grad(loss)(w, ours), jax.grad(loss)(w, _reference), rtol=1e-4
  )


def _sub_jaxprs(values):
  for v in values:
    if isinstance(v, jax.extend.core.ClosedJaxpr):
      yield v.jaxpr
    elif isinstance(v, jax.extend.core.Jaxpr):
      yield v
    elif isinstance(v, (tuple, list)):
      yield from _sub_jaxprs(v)


def _largest_intermediate(fn, *args) -> int:
  jaxpr = jax.make_jaxpr(fn)(*args)
  sizes = []

  def walk(jx):
    for eqn in jx.eqns:
      for v in eqn.outvars:
        sizes.append(int(np.prod(v.aval.shape)) if v.aval.shape else 1)
      for sub in _sub_jaxprs(eqn.params.values()):
        walk(sub)

  walk(jaxpr.jaxpr)
  return max(sizes)


def test_memory_is_chunk_by_vocab_not_length_by_vocab():
  v, d, t, chunk = 512, 8, 1024, 16
  w = jnp.ones((d, v)) * 0.01
  h = jnp.ones((1, t, d))
  y = jnp.zeros((1, t), jnp.int32)

  def loss(w):
    lp = logprobs.chunked_token_logprobs(lambda x: x @ w, h, y, chunk)
    return lp.sum()

  biggest = _largest_intermediate(jax.grad(loss), w)
  # Forward and backward: nothing as large as length x vocab (524,288).
  assert biggest <= max(chunk * v, d * v, t * d)
  full = _largest_intermediate(
      jax.grad(lambda w: _reference(lambda x: x @ w, h, y).sum()), w
  )
  assert full >= t * v


@pytest.mark.maxtext
def test_model_logprobs_equal_full_logits(model1):
  rng = np.random.default_rng(0)
  toks = jnp.asarray(rng.integers(0, 4096, (2, 128)), jnp.int32)
  pos = jnp.broadcast_to(jnp.arange(128), (2, 128))
  seg = jnp.ones_like(toks)
  with model1.rules():
    lp, out = jax.jit(
        lambda p: logprobs.token_logprobs(model1, p, toks, pos, seg, toks)
    )(model1.params)
    logits = jax.jit(
        lambda p, h: maxtext_model.logits_from_hidden(
            model1.graphdef, p, model1.rest, h
        )
    )(model1.params, out.hidden_btd)
  assert logits.shape == (2, 128, model1.config.vocab_size)
  ref = _reference(lambda x: x, logits, toks)
  np.testing.assert_allclose(lp, ref, rtol=1e-5, atol=1e-5)
  assert model1.config.logits_chunk < 128  # really chunked
