"""Routes MaxText's training attention to `blocked_attention` on request.

`maxtext_model.forward(..., attention_block=B)` traces the decoder inside
`attention_block(B)`; while it is active, the wrapped
`AttentionOp.apply_attention_dot` computes plain causal packed-row attention
(train mode, 'global' attention, no cache, sinks, extra masks, soft cap or
quantized einsums) with `blocked_attention.blocked_causal_attention`, and
leaves every other case, and every trace outside the context (samplers,
MaxText's own `train.main`), to MaxText.
"""

import contextlib
import contextvars

import jax
import jax.numpy as jnp
from maxtext.layers import attention_op

from search_agent.model import blocked_attention

# Block size of `blocked_attention` while `forward` traces (0: MaxText's).
_BLOCK = contextvars.ContextVar('attention_block', default=0)


@contextlib.contextmanager
def attention_block(block: int):
  """Inside: MaxText's plain training attention runs in `block` blocks."""
  token = _BLOCK.set(block)
  try:
    yield
  finally:
    _BLOCK.reset(token)


def _blocked_dot(apply_attention_dot):
  """Wraps AttentionOp.apply_attention_dot: blocked attention when asked.

  Only the plain case (train mode, causal 'global' attention over packed
  segments, no cache, sinks, extra masks or soft cap) is replaced; anything
  else runs MaxText's own code.
  """

  def wrapped(
      self,
      query,
      key,
      value,
      decoder_segment_ids,
      model_mode='train',
      previous_chunk=None,
      **kwargs,
  ):
    block = _BLOCK.get()
    plain = (
        block > 0
        and model_mode == 'train'
        and previous_chunk is None
        and decoder_segment_ids is not None
        and self.attention_type == attention_op.AttentionType.GLOBAL
        and not self.attn_logits_soft_cap
        and not self.config.moba
        and isinstance(key, jax.Array)
        and key.shape[1] == query.shape[1]
        and all(
            kwargs.get(k) is None
            for k in (
                'bidirectional_mask',
                'sinks',
                'indexer_mask',
                'compressed_mask',
                'decoder_segment_ids_kv',
            )
        )
        and not kwargs.get('record_max_logits')
        and kwargs.get('qk_product_einsum') is jnp.einsum
        and kwargs.get('wv_product_einsum') is jnp.einsum
    )
    if not plain:
      return apply_attention_dot(
          self,
          query,
          key,
          value,
          decoder_segment_ids,
          model_mode,
          previous_chunk,
          **kwargs,
      )
    out = blocked_attention.blocked_causal_attention(
        query, key, value, decoder_segment_ids, block
    )
    # Normalised already: MaxText's caller divides only when a sum is given.
    return out, None, None

  wrapped.search_agent_wrapped = True
  return wrapped


def install() -> None:
  """Wraps MaxText's AttentionOp.apply_attention_dot once per process."""
  op = attention_op.AttentionOp
  if not getattr(op.apply_attention_dot, 'search_agent_wrapped', False):
    op.apply_attention_dot = _blocked_dot(op.apply_attention_dot)
