"""Token sampling from logits: temperature, nucleus (top-p), greedy.

`sample` returns the drawn token and its log-probability under the
temperature-scaled distribution softmax(logits / T), before the top-p
truncation (the importance weights of RL compare the policy's full
distribution). Temperature 0 is greedy, with the raw model log-probability.
"""

import jax
import jax.numpy as jnp


def top_p_mask(logits_bv: jax.Array, top_p) -> jax.Array:
  """True for the smallest set of tokens whose probability reaches top_p.

  Tokens are taken in order of decreasing probability until the cumulative
  mass reaches `top_p`; the most likely token is always kept.
  """
  probs = jax.nn.softmax(logits_bv, axis=-1)
  order = jnp.argsort(-probs, axis=-1)
  sorted_p = jnp.take_along_axis(probs, order, axis=-1)
  before = jnp.cumsum(sorted_p, axis=-1) - sorted_p  # mass of better tokens
  keep_sorted = before < top_p
  keep_sorted = keep_sorted.at[..., 0].set(True)
  inverse = jnp.argsort(order, axis=-1)
  return jnp.take_along_axis(keep_sorted, inverse, axis=-1)


def sample(key, logits_bv: jax.Array, temperature, top_p):
  """(token [b], logprob [b]) drawn from logits [b, v]."""
  logits_bv = logits_bv.astype(jnp.float32)
  greedy = temperature <= 0
  scaled = logits_bv / jnp.where(greedy, 1.0, temperature)
  logp = jax.nn.log_softmax(scaled, axis=-1)
  masked = jnp.where(top_p_mask(scaled, top_p), scaled, -jnp.inf)
  drawn = jax.random.categorical(key, masked, axis=-1)
  token = jnp.where(greedy, jnp.argmax(logits_bv, axis=-1), drawn)
  lp = jnp.take_along_axis(logp, token[:, None], axis=-1)[:, 0]
  return token.astype(jnp.int32), lp
