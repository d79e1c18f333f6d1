"""Temperature, top-p and greedy sampling, by hand."""

import jax
import jax.numpy as jnp
import numpy as np

from search_agent.model import sampling

PROBS = np.array([0.5, 0.3, 0.15, 0.05])


def test_top_p_keeps_the_smallest_set_reaching_p():
  logits = jnp.log(jnp.asarray(PROBS))[None]
  # Mass of better tokens: 0, 0.5, 0.8, 0.95; kept while it is < top_p.
  assert sampling.top_p_mask(logits, 0.7)[0].tolist() == [1, 1, 0, 0]
  assert sampling.top_p_mask(logits, 0.81)[0].tolist() == [1, 1, 1, 0]
  assert sampling.top_p_mask(logits, 0.01)[0].tolist() == [1, 0, 0, 0]
  assert sampling.top_p_mask(logits, 1.0)[0].tolist() == [1, 1, 1, 1]
  # Order does not matter.
  perm = jnp.log(jnp.asarray(PROBS[[2, 0, 3, 1]]))[None]
  assert sampling.top_p_mask(perm, 0.7)[0].tolist() == [0, 1, 0, 1]


def test_logprob_is_under_the_temperature_scaled_distribution():
  logits = jnp.log(jnp.asarray(PROBS))[None]
  tok, lp = sampling.sample(jax.random.PRNGKey(0), logits, 0.0, 1.0)
  assert int(tok[0]) == 0 and float(lp[0]) == np.float32(np.log(0.5))
  # T = 2: p_i ∝ sqrt(p_i).
  q = np.sqrt(PROBS) / np.sqrt(PROBS).sum()
  keys = jax.random.split(jax.random.PRNGKey(1), 4000)
  toks, lps = jax.vmap(lambda k: sampling.sample(k, logits, 2.0, 1.0))(keys)
  toks, lps = np.asarray(toks[:, 0]), np.asarray(lps[:, 0])
  np.testing.assert_allclose(lps, np.log(q[toks]), rtol=1e-5)
  freq = np.bincount(toks, minlength=4) / len(toks)
  np.testing.assert_allclose(freq, q, atol=0.03)


def test_top_p_sampling_frequencies():
  logits = jnp.log(jnp.asarray(PROBS))[None]
  keys = jax.random.split(jax.random.PRNGKey(2), 4000)
  toks, _ = jax.vmap(lambda k: sampling.sample(k, logits, 1.0, 0.7))(keys)
  freq = np.bincount(np.asarray(toks[:, 0]), minlength=4) / 4000
  # Only {0, 1}, renormalized: 0.5 / 0.8 and 0.3 / 0.8.
  assert freq[2] == freq[3] == 0
  np.testing.assert_allclose(freq[:2], [0.625, 0.375], atol=0.03)
