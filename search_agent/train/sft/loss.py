"""The SFT loss of open-recipe.md, as pure functions.

  L_SFT = - sum_{i in B} sum_t m_{i,t} log pi(x_{i,t} | h_{i,t})
          / sum_{i in B} sum_t m_{i,t}

B is the whole optimizer update: the denominator counts the eligible tokens of
every microbatch of the update, so each supervised token has the same weight
however the update is split. With gradient accumulation each microbatch
contributes `masked_nll_sum / update_tokens`; their sum is L_SFT exactly.
"""

import jax
import jax.numpy as jnp


def masked_nll_sum(logp: jax.Array, mask: jax.Array) -> jax.Array:
  """-sum m * log p over all positions (float32)."""
  return -jnp.sum(logp.astype(jnp.float32) * mask.astype(jnp.float32))


def eligible_tokens(mask: jax.Array) -> jax.Array:
  """Number of supervised tokens (float32)."""
  return jnp.sum(mask.astype(jnp.float32))


def sft_loss(logp: jax.Array, mask: jax.Array) -> jax.Array:
  """L_SFT over every position given (one whole update); 0 if no token."""
  count = eligible_tokens(mask)
  return masked_nll_sum(logp, mask) / jnp.maximum(count, 1.0)
