"""A multi-token extend forward on MaxText's prefill-mode graph.

MaxText 0.2.5 appends to a KV cache one token per decode step, or through
chunked prefill at a static prefix length. `extending(offsets, lengths)`
turns the prefill-mode forward traced inside it into an *extend*: row e's
N input tokens sit at positions offsets[e]..offsets[e]+N-1; their keys and
values are written into the row's prefill cache at those entries (the
first lengths[e] of them; the rest are padding and change nothing), and
every query attends over the row's cached entries of segment id 1 up to its
own position (the kept context, then the new tokens causally). The prefill
cache handed to the forward is the rows' context (`engine_core` gathers it
from the decode cache), so the forward costs the new tokens only.

While the context is active, the wrapped `KVCache.__call__` and
`AttentionOp.apply_attention` take over prefill mode; every trace outside
it (training, the sampler, decode steps) runs MaxText's own code. The
attention reuses MaxText's `qk_product` and `compute_local_attention`
(the decode path's softmax pieces) with its own mask.
"""

import contextlib
import contextvars
import inspect

import jax
import jax.numpy as jnp
from maxtext.common import common_types
from maxtext.inference import kvcache
from maxtext.layers import attention_op

# (offsets [E], lengths [E]) of the extend being traced, else None.
_EXTEND = contextvars.ContextVar('extend', default=None)


@contextlib.contextmanager
def extending(offsets: jax.Array, lengths: jax.Array):
  """Inside: prefill-mode forwards append at `offsets` (see module doc)."""
  install()
  token = _EXTEND.set((offsets, lengths))
  try:
    yield
  finally:
    _EXTEND.reset(token)


def _cache_call(call):
  """Wraps KVCache.__call__: prefill mode writes at the extend offsets."""

  def wrapped(self, key, value, decoder_segment_ids, model_mode, *args,
              **kwargs):  # fmt: skip
    ext = _EXTEND.get()
    if ext is None or model_mode != common_types.MODEL_MODE_PREFILL:
      return call(
          self, key, value, decoder_segment_ids, model_mode, *args, **kwargs
      )
    if self.kv_quant:
      raise NotImplementedError('extend with a quantized KV cache')
    return _write(self, key, value, *ext), None

  wrapped.search_agent_wrapped = True
  return wrapped


def _write(cache, key, value, offsets, lengths):
  """Puts the new keys/values at their entries; returns the whole row."""
  k_vars, v_vars, seg_var = cache._get_prefill_cache_vars()  # pylint: disable=protected-access
  order = cache.prefill_cache_axis_order
  seg = seg_var.get_value()  # [E, S]
  n = key.shape[1]
  rel = jnp.arange(seg.shape[1])[None] - offsets[:, None]
  put = (rel >= 0) & (rel < lengths[:, None])  # [E, S]
  idx = jnp.clip(rel, 0, n - 1)[:, :, None, None]
  out = []
  for new, cvars in ((key, k_vars), (value, v_vars)):
    old = cache.get_cached_values(cvars, new.dtype, order)  # [E, S, n, d]
    got = jnp.take_along_axis(new, idx, axis=1).astype(old.dtype)
    row = jnp.where(put[:, :, None, None], got, old)
    cvars[0].set_value(jnp.transpose(row, order))
    out.append(row)
  seg = jnp.where(put, 1, seg).astype(seg.dtype)
  seg_var.set_value(seg)
  return out[0], out[1], seg


def _attention(apply_attention):
  """Wraps AttentionOp.apply_attention: extend attention in prefill mode."""
  signature = inspect.signature(apply_attention)

  def wrapped(self, *args, **kwargs):
    ext = _EXTEND.get()
    if ext is None:
      return apply_attention(self, *args, **kwargs)
    a = signature.bind(self, *args, **kwargs)
    a.apply_defaults()
    a = a.arguments
    if a['model_mode'] != common_types.MODEL_MODE_PREFILL:
      return apply_attention(self, *args, **kwargs)
    unsupported = (
        self.attention_type != attention_op.AttentionType.GLOBAL
        or self.config.moba
        or any(
            a.get(k) is not None
            for k in ('previous_chunk', 'bidirectional_mask', 'sinks',
                      'indexer_mask', 'compressed_mask')
        )  # fmt: skip
    )
    if unsupported:
      raise NotImplementedError(
          'extend supports plain global attention only (no sliding window,'
          ' sinks, MoBA or compressed attention)'
      )
    return _extend_dot(self, a, ext[0])

  wrapped.search_agent_wrapped = True
  return wrapped


def _extend_dot(op, a, offsets):
  """MaxText's dot attention with the extend mask; (out, max, sum)."""
  query, key, value = a['query'], a['key'], a['value']
  if op.float32_qk_product:
    query, key = query.astype(jnp.float32), key.astype(jnp.float32)
  t, s = query.shape[1], key.shape[1]
  weights = op.qk_product(
      query, key, t, common_types.MODEL_MODE_PREFILL, a['qk_product_einsum']
  )
  if op.attn_logits_soft_cap:
    cap = op.attn_logits_soft_cap
    weights = jnp.tanh(weights / cap) * cap
  if op.float32_logits:
    weights = weights.astype(jnp.float32)
  q_pos = offsets[:, None] + jnp.arange(t)[None]  # [E, T]
  visible = (a['decoder_segment_ids'][:, None, :] == 1) & (
      jnp.arange(s)[None, None, :] <= q_pos[:, :, None]
  )  # [E, T, S]
  mask = jnp.where(visible, 0.0, common_types.DEFAULT_MASK_VALUE)
  weights = attention_op.apply_mask_to_logits(weights, mask[:, None, None])
  return op.compute_local_attention(
      weights,
      value,
      t,
      common_types.MODEL_MODE_PREFILL,
      a['wv_product_einsum'],
  )


def install() -> None:
  """Wraps MaxText's KVCache and AttentionOp once per process."""
  cache = kvcache.KVCache
  if not getattr(cache.__call__, 'search_agent_wrapped', False):
    cache.__call__ = _cache_call(cache.__call__)
  op = attention_op.AttentionOp
  if not getattr(op.apply_attention, 'search_agent_wrapped', False):
    op.apply_attention = _attention(op.apply_attention)
