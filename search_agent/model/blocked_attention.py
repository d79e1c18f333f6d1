"""Causal attention over packed rows, block by block, skipping empty blocks.

MaxText's dot-product attention (the only kernel XLA:CPU runs) builds the
whole T x T score matrix of a packed row and masks it: at T=2,048 with
~400-token segments, over 80% of those scores belong to other segments or
to the future, and their elementwise softmax dominates a tiny model's step
on CPU. Here the row is cut into blocks of `block` positions; query block i
visits key blocks j <= i (causality, static) and computes a pair only when
some query and key of the pair share a segment (`lax.cond`, so skipped
pairs cost one comparison). The blocks' partial softmaxes are combined
exactly (log-sum-exp), so the result equals the full masked softmax up to
float rounding.

Semantics match MaxText's mask: a query attends to keys at or before it
with the same segment id (padding, id 0, attends to padding).
"""

import jax
import jax.numpy as jnp

# MaxText's DEFAULT_MASK_VALUE (a large negative, finite, score).
MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)


def blocked_causal_attention(
    query_btnd: jax.Array,
    key_btkd: jax.Array,
    value_btkd: jax.Array,
    segments_bt: jax.Array,
    block: int,
) -> jax.Array:
  """softmax(q k^T, causal & same segment) v, per block pair.

  Args:
    query_btnd: Queries, already scaled, [b, t, heads, d].
    key_btkd: Keys [b, t, kv_heads, d] (heads a multiple of kv_heads).
    value_btkd: Values [b, t, kv_heads, d].
    segments_bt: Segment id of every position (packing).
    block: Positions per block (the row is padded up to a multiple; padded
      keys match no query).

  Returns:
    Attention outputs [b, t, heads, d] in the query's dtype.
  """
  b, t, n, d = query_btnd.shape
  kv = key_btkd.shape[2]
  g = n // kv
  block = min(block, t)
  nb = -(-t // block)
  pad = nb * block - t
  if pad:
    widths = ((0, 0), (0, pad), (0, 0), (0, 0))
    query_btnd = jnp.pad(query_btnd, widths)
    key_btkd, value_btkd = jnp.pad(key_btkd, widths), jnp.pad(
        value_btkd, widths
    )
    segments_bt = jnp.pad(segments_bt, ((0, 0), (0, pad)), constant_values=-1)
  q = query_btnd.astype(jnp.float32).reshape(b, nb, block, kv, g, d)
  k = key_btkd.astype(jnp.float32).reshape(b, nb, block, kv, d)
  v = value_btkd.astype(jnp.float32).reshape(b, nb, block, kv, d)
  seg = segments_bt.reshape(b, nb, block)
  causal_qs = jnp.tril(jnp.ones((block, block), bool))
  # Offset 0: every query block with its own key block (always needed).
  acc = _offset(q, k, v, seg, seg, causal_qs)
  for off in range(1, nb):
    # Key block i - off beside query block i (blocks before 0: id -1).
    k_o, v_o = _shift(k, off, 0.0), _shift(v, off, 0.0)
    seg_o = _shift(seg, off, -1)
    needed = jnp.any(seg[:, :, :, None] == seg_o[:, :, None, :])
    part = jax.lax.cond(
        needed,
        lambda *xs: _offset(*xs, None),
        _empty,
        q,
        k_o,
        v_o,
        seg,
        seg_o,
    )
    acc = _merge(acc, part)
  m, l, o = acc
  del m
  out = jnp.einsum('bnkgqd->bnqkgd', o / l).reshape(b, nb * block, n, d)
  return out[:, :t].astype(query_btnd.dtype)


def _shift(x, off: int, fill):
  """x[:, i - off] at block i (axis 1); `fill` before the first block."""
  widths = [(0, 0)] * x.ndim
  widths[1] = (off, 0)
  return jnp.pad(x[:, : x.shape[1] - off], widths, constant_values=fill)


def _offset(q, k, v, seg_q, seg_k, causal_qs):
  """(max, sum, unnormalised output) of every query block at one offset."""
  s = jnp.einsum('bnqkgd,bnskd->bnkgqs', q, k)
  mask = seg_q[:, :, :, None] == seg_k[:, :, None, :]
  if causal_qs is not None:
    mask = mask & causal_qs
  s = jnp.where(mask[:, :, None, None], s, MASK_VALUE)
  m = jnp.max(s, axis=-1, keepdims=True)
  p = jnp.exp(s - m)
  return (
      m,
      jnp.sum(p, axis=-1, keepdims=True),
      jnp.einsum('bnkgqs,bnskd->bnkgqd', p, v),
  )


def _empty(q, k, v, seg_q, seg_k):
  del k, v, seg_q, seg_k
  b, nb, bq, kv, g, d = q.shape
  m = jnp.full((b, nb, kv, g, bq, 1), MASK_VALUE, jnp.float32)
  return m, jnp.zeros_like(m), jnp.zeros((b, nb, kv, g, bq, d), jnp.float32)


def _merge(acc, part):
  """Online softmax: two (max, sum, output) partials over disjoint keys."""
  (m1, l1, o1), (m2, l2, o2) = acc, part
  m = jnp.maximum(m1, m2)
  a1, a2 = jnp.exp(m1 - m), jnp.exp(m2 - m)
  return m, a1 * l1 + a2 * l2, a1 * o1 + a2 * o2
