"""The IcePop surrogate: hand-worked values, gradients, accumulation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.train.rl import loss as loss_lib

LN2 = np.log(2.0)
# Trajectory A (A=+0.5) and B (A=-0.5), learner at version 10.
MASK = np.array([[0, 1, 1, 1], [0, 0, 1, 1]], np.int32)
VERS = np.array([[-1, 10, 10, 1], [-1, -1, 2, 3]], np.int32)
GEN = np.array([[0, -1.0, -2.0, -1.0], [0, 0, -0.5, -3.0]], np.float32)
LP = np.array(
    [[0, -1.0, -0.2, -1.5], [0, 0, -0.5 - LN2, -3.0 + np.log(0.1)]],
    np.float32,
)
BATCH = loss_lib.LossBatch(
    loss_mask_bt=MASK,
    gen_logprobs_bt=GEN,
    versions_bt=VERS,
    advantages_b=np.array([0.5, -0.5], np.float32),
)


def test_hand_worked_example():
  # A: t1 w=1 kept: 0.5*1*(-1) = -0.5; t2 w=e^1.8=6.05 zeroed (counted);
  #    t3 age 9 > 8 masked.  B: t2 age 8, w=0.5: -0.5*0.5*(-0.5-ln2);
  #    t3 age 7, w=0.1 zeroed (counted).  N = 4.
  sums = loss_lib.loss_sums(jnp.asarray(LP), BATCH, 10)
  objective = -0.5 + 0.25 * (0.5 + LN2)
  m = loss_lib.finalize(sums)
  assert float(sums.tokens) == 4
  assert float(sums.objective) == pytest.approx(objective, rel=1e-5)
  assert float(m['loss']) == pytest.approx(-objective / 4, rel=1e-5)
  assert float(m['icepop_mask_rate']) == pytest.approx(0.5)
  hist = np.asarray(m['age_hist'])
  assert hist[0] == 2 and hist[7] == 1 and hist[8] == 1 and hist[9] == 1
  assert hist.sum() == 5
  gap = (0 + 1.8 + LN2 + np.log(10.0)) / 4  # mean |lp - gen| over m
  assert float(m['logprob_abs_gap']) == pytest.approx(gap, rel=1e-5)


def test_gradient_wrt_logprobs_is_minus_m_a_w_over_n():
  def loss(lp):
    return loss_lib.finalize(loss_lib.loss_sums(lp, BATCH, 10))['loss']

  g = np.asarray(jax.grad(loss)(jnp.asarray(LP)))
  want = np.zeros_like(LP)
  want[0, 1] = -0.5 * 1.0 / 4
  want[1, 2] = 0.5 * 0.5 / 4
  np.testing.assert_allclose(g, want, atol=1e-6)


def _bigram_logprobs(w_vv, tokens_bt):
  logp = jax.nn.log_softmax(w_vv[tokens_bt[:, :-1]], axis=-1)
  lp = jnp.take_along_axis(logp, tokens_bt[:, 1:, None], axis=-1)[..., 0]
  return jnp.pad(lp, ((0, 0), (1, 0)))


def test_matches_numerical_gradient_of_importance_weighted_objective():
  """grad(surrogate) == finite differences of -sum m A w(theta) 1[kept] / N."""
  with jax.enable_x64(True):
    rng = np.random.default_rng(0)
    w0 = jnp.asarray(rng.normal(size=(5, 5)))
    tok = jnp.asarray(rng.integers(0, 5, size=(3, 7)))
    lp0 = _bigram_logprobs(w0, tok)
    gen = lp0 + jnp.asarray(rng.normal(scale=1.5, size=lp0.shape))
    batch = loss_lib.LossBatch(
        loss_mask_bt=jnp.asarray(rng.integers(0, 2, size=(3, 7))),
        gen_logprobs_bt=gen,
        versions_bt=jnp.asarray(rng.integers(-1, 6, size=(3, 7))),
        advantages_b=jnp.asarray([0.7, -0.2, -0.5]),
    )
    cfg = loss_lib.PolicyLossConfig(max_token_age=3)
    m = loss_lib.eligible_mask(batch, 5, cfg)
    _, kept = loss_lib.icepop_weights(lp0, gen, cfg)
    assert 0 < int((m & ~kept).sum()) < int(m.sum())  # some zeroed, some not

    def surrogate(w):
      s = loss_lib.loss_sums(_bigram_logprobs(w, tok), batch, 5, cfg)
      return loss_lib.finalize(s)['loss']

    def true_objective(w):
      ratio = jnp.exp(_bigram_logprobs(w, tok) - gen)
      a = batch.advantages_b[:, None]
      return -jnp.sum(jnp.where(m & kept, a * ratio, 0.0)) / m.sum()

    grad = np.asarray(jax.grad(surrogate)(w0))
    eps = 1e-6
    d = eps * jnp.eye(25).reshape(25, 5, 5)  # one perturbation per entry
    f = jax.vmap(true_objective)
    fd = np.asarray((f(w0 + d) - f(w0 - d)) / (2 * eps)).reshape(5, 5)
    np.testing.assert_allclose(grad, fd, atol=1e-7)
    assert np.abs(grad).max() > 1e-3


def test_clipped_variant_hand_worked():
  cfg = loss_lib.PolicyLossConfig(kl_coef=0.0)
  lp = jnp.asarray(GEN + np.log(np.array([[1, 1, 1.5, 1], [1, 1, 0.5, 1]])))
  s = loss_lib.clipped_loss_sums(lp, lp, BATCH, 10, cfg)
  # A t1: ratio 1 -> 0.5; A t2: ratio 1.5 clipped to 1.28 -> 0.64;
  # B t2: ratio 0.5, A<0: min(-0.25, -0.4) = -0.4; B t3: ratio 1 -> -0.5.
  assert float(s.objective) == pytest.approx(0.5 + 0.64 - 0.4 - 0.5, rel=1e-5)
  assert float(s.tokens) == 4
  kl = loss_lib.clipped_loss_sums(
      lp, lp + 0.1, BATCH, 10, loss_lib.PolicyLossConfig(kl_coef=0.001)
  )
  k3 = np.exp(0.1) - 0.1 - 1
  assert float(s.objective - kl.objective) == pytest.approx(
      4 * 0.001 * k3, rel=1e-2
  )


def test_icepop_bounds_are_inclusive():
  """w = 0.2 and w = 5 keep their value; just outside is zeroed."""
  with jax.enable_x64(True):
    ws = np.array([0.2, 5.0, 0.2 * (1 - 1e-12), 5.0 * (1 + 1e-12), 1.0])
    lp = jnp.asarray(np.log(ws))
    assert float(jnp.exp(lp[0])) == 0.2 and float(jnp.exp(lp[1])) == 5.0
    cfg = loss_lib.PolicyLossConfig()
    w, kept = loss_lib.icepop_weights(lp, jnp.zeros(5), cfg)
    np.testing.assert_array_equal(kept, [True, True, False, False, True])
    np.testing.assert_allclose(w, [0.2, 5.0, 0.0, 0.0, 1.0], rtol=1e-12)
