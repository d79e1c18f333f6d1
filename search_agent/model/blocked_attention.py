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
float rounding. The backward is written by hand (`_attend`, FlashAttention-2's
recurrences per block pair from the saved log-sum-exp): autodiff through the
offsets' `cond`s saved every offset's scores and filled zeros for skipped
ones, and took 1.5x the update time of the tiny model
(search_agent.train.sft.benchmark, 2 cores).

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
  o = _attend(q, k, v, seg)
  out = jnp.einsum('bnkgqd->bnqkgd', o).reshape(b, nb * block, n, d)
  return out[:, :t].astype(query_btnd.dtype)


def _needed(seg, off: int) -> jax.Array:
  """Whether any query block sees a key of the block `off` back (off >= 1)."""
  return jnp.any(_mask(seg, off))


def _mask(seg, off: int) -> jax.Array:
  """[b, nb, q, s]: key s of block i - off is visible to query q of block i."""
  seg_o = _shift(seg, off, -1)
  mask = seg[:, :, :, None] == seg_o[:, :, None, :]
  if off == 0:
    block = seg.shape[2]
    mask = mask & jnp.tril(jnp.ones((block, block), bool))
  return mask


def _scores(q, k, seg, off: int) -> jax.Array:
  """Masked scores [b, nb, kv, g, q, s] against the key block `off` back."""
  s = jnp.einsum('bnqkgd,bnskd->bnkgqs', q, _shift(k, off, 0.0))
  return jnp.where(_mask(seg, off)[:, :, None, None], s, MASK_VALUE)


def _over_offsets(seg, step, init):
  """`step(carry, off)` at offset 0, then at each offset some block needs.

  Offset 0 (every query block with its own key block) always runs; offset
  `off` only when some query block shares a segment with the key block `off`
  back (`lax.cond`: a skipped offset costs one comparison).
  """
  carry = step(init, 0)
  for off in range(1, seg.shape[1]):
    carry = jax.lax.cond(
        _needed(seg, off),
        lambda c, off=off: step(c, off),
        lambda c: c,
        carry,
    )
  return carry


def _forward(q, k, v, seg):
  """(output, log-sum-exp), both [b, nb, kv, g, q, .], over the offsets."""

  def offset(acc, off):
    s = _scores(q, k, seg, off)
    m = jnp.max(s, axis=-1, keepdims=True)
    p = jnp.exp(s - m)
    part = (
        m,
        jnp.sum(p, axis=-1, keepdims=True),
        jnp.einsum('bnkgqs,bnskd->bnkgqd', p, _shift(v, off, 0.0)),
    )
    return part if acc is None else _merge(acc, part)

  m, l, o = _over_offsets(seg, offset, None)
  return o / l, m + jnp.log(l)


@jax.custom_vjp
def _attend(q, k, v, seg):
  """Attention outputs [b, nb, kv, g, q, d] of blocked q [b, nb, q, kv, g, d],
  k and v [b, nb, s, kv, d], segments [b, nb, q].

  Differentiated by hand (the FlashAttention-2 backward, block pair by block
  pair, from the saved log-sum-exp): autodiff through the offsets' `cond`s
  would save every offset's scores as residuals and fill zeros for the
  skipped ones.
  """
  return _forward(q, k, v, seg)[0]


def _attend_fwd(q, k, v, seg):
  o, lse = _forward(q, k, v, seg)
  return o, (q, k, v, seg, o, lse)


def _attend_bwd(res, do):
  q, k, v, seg, o, lse = res
  # D_i = sum_d dO_i * O_i: the softmax backward's row term.
  delta = jnp.sum(do * o, axis=-1, keepdims=True)

  def offset(grads, off):
    dq, dk, dv = grads
    k_o, v_o = _shift(k, off, 0.0), _shift(v, off, 0.0)
    # Masked scores are MASK_VALUE: their probability is exactly 0.
    p = jnp.exp(_scores(q, k, seg, off) - lse)
    dp = jnp.einsum('bnkgqd,bnskd->bnkgqs', do, v_o)
    ds = p * (dp - delta)
    dq = dq + jnp.einsum('bnkgqs,bnskd->bnqkgd', ds, k_o)
    # Key block i - off got these from query block i: shift them back.
    dk = dk + _unshift(jnp.einsum('bnkgqs,bnqkgd->bnskd', ds, q), off)
    dv = dv + _unshift(jnp.einsum('bnkgqs,bnkgqd->bnskd', p, do), off)
    return dq, dk, dv

  zeros = (jnp.zeros_like(q), jnp.zeros_like(k), jnp.zeros_like(v))
  return (*_over_offsets(seg, offset, zeros), None)


_attend.defvjp(_attend_fwd, _attend_bwd)


def _shift(x, off: int, fill):
  """x[:, i - off] at block i (axis 1); `fill` before the first block."""
  if off == 0:
    return x
  widths = [(0, 0)] * x.ndim
  widths[1] = (off, 0)
  return jnp.pad(x[:, : x.shape[1] - off], widths, constant_values=fill)


def _unshift(x, off: int):
  """The inverse of `_shift`: x[:, j + off] at block j (zeros past the end)."""
  if off == 0:
    return x
  widths = [(0, 0)] * x.ndim
  widths[1] = (0, off)
  return jnp.pad(x[:, off:], widths)


def _merge(acc, part):
  """Online softmax: two (max, sum, output) partials over disjoint keys."""
  (m1, l1, o1), (m2, l2, o2) = acc, part
  m = jnp.maximum(m1, m2)
  a1, a2 = jnp.exp(m1 - m), jnp.exp(m2 - m)
  return m, a1 * l1 + a2 * l2, a1 * o1 + a2 * o2
