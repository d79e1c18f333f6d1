"""Per-token log-probabilities of given tokens, chunked over the sequence.

The output head runs on `chunk` positions at a time inside a rematerialized
`lax.scan`, so neither the forward nor the backward pass ever holds more than
batch x chunk x vocab logits: memory does not grow with length x vocab.

`temperature` scores under softmax(logits / T), the distribution the
sampler draws from (model/sampling.py); T <= 0 (greedy) and T = 1 are the
raw model log-probabilities, as the sampler records them.
"""

import functools

import jax
import jax.numpy as jnp

from search_agent.model import maxtext_model


def chunked_token_logprobs(
    logits_fn,
    hidden_btd: jax.Array,
    targets_bt: jax.Array,
    chunk: int,
    remat: bool = True,
    temperature: float = 1.0,
) -> jax.Array:
  """log p(targets[b, t] | hidden[b, t]) for every position.

  Args:
    logits_fn: Maps hidden states [b, c, d] to logits [b, c, v].
    hidden_btd: Final hidden states.
    targets_bt: Token ids to score (the next tokens).
    chunk: Positions per chunk; the length is padded up to a multiple.
      Chunks are strided (every n-th position), not contiguous.
    remat: Recompute each chunk's logits in the backward pass (memory holds
      one chunk's logits); False keeps them (faster, n chunks' memory).
    temperature: Score under softmax(logits / temperature); <= 0 means 1.

  Returns:
    float32 log-probabilities [b, t].
  """
  b, t, d = hidden_btd.shape
  n = -(-t // chunk)
  pad = n * chunk - t
  if pad:
    hidden_btd = jnp.pad(hidden_btd, ((0, 0), (0, pad), (0, 0)))
    targets_bt = jnp.pad(targets_bt, ((0, 0), (0, pad)))
  # Chunk k holds positions k, k + n, k + 2n, ...: strided chunks keep the
  # sequence axis evenly split over the context-parallel devices, so no
  # chunk needs a reshard.
  h_nbcd = jnp.moveaxis(hidden_btd.reshape(b, chunk, n, d), 2, 0)
  y_nbc = jnp.moveaxis(targets_bt.reshape(b, chunk, n), 2, 0)

  scale = 1.0 / temperature if temperature > 0 else 1.0

  def one_chunk(h_bcd, y_bc):
    logits_bcv = logits_fn(h_bcd).astype(jnp.float32)
    if scale != 1.0:
      logits_bcv = logits_bcv * scale
    lse_bc = jax.nn.logsumexp(logits_bcv, axis=-1)
    picked_bc = jnp.take_along_axis(logits_bcv, y_bc[..., None], axis=-1)
    return picked_bc[..., 0] - lse_bc

  if remat:
    one_chunk = jax.checkpoint(one_chunk, prevent_cse=False)

  def body(carry, xs):
    return carry, one_chunk(*xs)

  _, lp_nbc = jax.lax.scan(body, None, (h_nbcd, y_nbc))
  return jnp.moveaxis(lp_nbc, 0, 2).reshape(b, n * chunk)[:, :t]


def token_logprobs(
    model: maxtext_model.Model,
    params,
    tokens_bt: jax.Array,
    positions_bt: jax.Array,
    segments_bt: jax.Array,
    targets_bt: jax.Array,
    forced_bsle: jax.Array | None = None,
    temperature: float = 1.0,
    score_index_bs: jax.Array | None = None,
) -> tuple[jax.Array, maxtext_model.ForwardOut]:
  """Forward pass + chunked log-probs of `targets_bt`; call under rules().

  With `score_index_bs` [b, s] the output head runs only at those positions
  and the log-probs are [b, s] (position `score_index_bs[b, j]`); else
  [b, t].
  """
  out = maxtext_model.forward(
      model.graphdef,
      params,
      model.rest,
      tokens_bt,
      positions_bt,
      segments_bt,
      forced_bsle,
      attention_block=model.config.attention_block,
  )
  logits_fn = functools.partial(
      maxtext_model.logits_from_hidden, model.graphdef, params, model.rest
  )
  hidden, chunk = out.hidden_btd, model.config.logits_chunk
  if score_index_bs is not None:
    hidden = jnp.take_along_axis(hidden, score_index_bs[..., None], axis=1)
    targets_bt = jnp.take_along_axis(targets_bt, score_index_bs, axis=1)
    s = score_index_bs.shape[1]
    chunk = -(-s // -(-s // chunk))  # as many chunks, as little padding
  lp = chunked_token_logprobs(
      logits_fn,
      hidden,
      targets_bt,
      chunk,
      model.config.logits_remat,
      temperature,
  )
  return lp, out
