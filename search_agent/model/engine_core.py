"""Device side of the rollout engine: fixed decode slots on MaxText's KV cache.

MaxText's decode cache has, per batch row (a *slot*), a prefill region of
`max_context` entries and an autoregressive (AR) ring of `ring_len` entries
written at one global index that every decode step advances. A slot keeps
its session's context in the prefill region (entries 0..L-1, segment id 1);
a request on the slot feeds its new tokens and its generated tokens one per
decode step into the ring (`decode_block`, K steps per device call, sampling
on device); when the request ends, `commit` moves its ring entries after the
context in the prefill region, so the next turn of the session feeds only
its new tokens. Keys are stored after RoPE and attention in decode mode
masks by segment id only, so where an entry sits does not change the result.
A fresh long prompt is instead computed in MaxText's prefill mode (one
batch-1 forward, padded to a power-of-two bucket) and installed into the
slot (`install`).

Sampling reuses `sampling.sample` row by row: the token is drawn from
softmax(logits / T) with top-p, its log-probability is under softmax(logits /
T) before top-p (the raw model log-probability when T is 0 or 1); the key of
each draw is fold_in(PRNGKey(seed), position), so a request's tokens do not
depend on which requests share its batch. When every row has top_p = 1 (RL)
the block skips the nucleus sort (`_draw_full`: the same draw from
softmax(logits / T), about half a CPU decode step at 32 slots).
"""

import dataclasses
from typing import Any

from flax import nnx
import jax
import jax.numpy as jnp
from maxtext.utils import maxtext_utils
import numpy as np

from search_agent.model import config as config_lib
from search_agent.model import maxtext_model
from search_agent.model import mesh as mesh_lib
from search_agent.model import sampler as sampler_lib
from search_agent.model import sampling


@dataclasses.dataclass(frozen=True)
class BlockOut:
  """Per-step outputs of one decode block (host numpy arrays).

  Attributes:
    tokens_bk: Sampled token after each step.
    logprobs_bk: Its sampling log-probability.
    routing_bkle: Experts each fed token was routed to, or None.
  """

  tokens_bk: np.ndarray
  logprobs_bk: np.ndarray
  routing_bkle: np.ndarray | None


class EngineCore:
  """The jitted cache operations for `slots` rows; no host scheduling."""

  def __init__(
      self,
      cfg: config_lib.ModelConfig,
      layout: mesh_lib.Parallelism,
      *,
      slots: int,
      max_context: int,
      ring_len: int,
      steps_per_call: int,
      devices: list[jax.Device] | None = None,
  ):
    devices = devices or jax.devices()
    if ring_len > max_context:
      raise ValueError(
          f'ring_len {ring_len} > max_context {max_context}: a turn must fit'
          ' the prefill region it is committed into'
      )
    self.slots, self.max_context, self.ring_len = slots, max_context, ring_len
    self.steps = steps_per_call
    cfg = dataclasses.replace(cfg, max_target_length=max_context + ring_len)
    self.record_routing = cfg.supports_replay
    self.mt_config = maxtext_model.maxtext_config(
        cfg,
        layout,
        len(devices),
        per_device_batch_size=slots / len(devices),
        max_prefill_predict_length=max_context,
        model_call_mode='inference',
        return_routed_experts=self.record_routing,
    )
    self.mesh = maxtext_utils.get_mesh_from_config(self.mt_config, devices)
    self.rules = maxtext_model.MeshAndRules(
        self.mesh, self.mt_config.logical_axis_rules
    )
    self._prefill_mode = sampler_lib.split_mode(
        self.mt_config, self.mesh, 'prefill'
    )
    self._decode_mode = sampler_lib.split_mode(
        self.mt_config, self.mesh, 'autoregressive'
    )
    self._axes = _cache_axes(self.mt_config)
    self.cache = self._decode_mode['cache']
    self._prefill_jit = jax.jit(self._prefill)
    self._install_jit = jax.jit(self._install, donate_argnums=0)
    self._admit_jit = jax.jit(self._admit, donate_argnums=0)
    self._commit_jit = jax.jit(self._commit, donate_argnums=0)
    self._copy_jit = jax.jit(self._copy, donate_argnums=0)
    self._block_jit = jax.jit(self._block, donate_argnums=1)

  def abstract_params(self) -> Any:
    """Shapes, dtypes and shardings of the weights (a restore target)."""
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        self._prefill_mode['params'],
    )

  def place_params(self, params: Any) -> Any:
    """`params` on this engine's mesh (raises on a structure mismatch)."""
    shardings = jax.tree.map(lambda x: x.sharding, self._prefill_mode['params'])
    return jax.device_put(params, shardings)

  # Host-facing operations (all mutate self.cache).

  def prefill(self, params, token_ids) -> np.ndarray | None:
    """Prefills `token_ids` alone; keeps its cache for `install`.

    Returns the routing [n, layers, top_k] of the tokens, or None.
    """
    n = len(token_ids)
    bucket = min(_bucket(n), self.max_context)
    toks = np.zeros((1, bucket), np.int32)
    toks[0, :n] = token_ids
    with self.rules:
      self._pending, routing = self._prefill_jit(
          params, jnp.asarray(toks), jnp.int32(n)
      )
    return None if routing is None else np.asarray(routing[0, :n])

  def install(self, slot: int, length: int) -> None:
    """The last `prefill` becomes slot's context (entries 0..length-1)."""
    with self.rules:
      self.cache = self._install_jit(
          self.cache, self._pending, jnp.int32(slot), jnp.int32(length)
      )
    self._pending = None

  def admit(self, slot: int, keep: int) -> None:
    """Keeps slot's first `keep` context entries; clears its ring."""
    with self.rules:
      self.cache = self._admit_jit(self.cache, jnp.int32(slot), jnp.int32(keep))

  def commit(self, slot: int, ring_start: int, n: int, dst: int) -> None:
    """Moves `n` ring entries from `ring_start` to context entry `dst`."""
    with self.rules:
      self.cache = self._commit_jit(
          self.cache, *(jnp.int32(v) for v in (slot, ring_start, n, dst))
      )

  def copy_context(self, src: int, dst: int, keep: int) -> None:
    """Slot dst's context becomes slot src's first `keep` entries."""
    with self.rules:
      self.cache = self._copy_jit(
          self.cache, *(jnp.int32(v) for v in (src, dst, keep))
      )

  def decode_block(self, params, forced_bk, n_forced_b, last_b, pos_b, seeds_b,
                   temps_b, top_ps_b) -> BlockOut:  # fmt: skip
    """Runs `steps_per_call` decode steps on every slot.

    Step s of slot b feeds forced_bk[b, s] while s < n_forced_b[b], else the
    token sampled at the previous step (last_b[b] at step 0), at position
    pos_b[b] + s.
    """
    args = [
        jnp.asarray(a, dt)
        for a, dt in (
            (forced_bk, jnp.int32),
            (n_forced_b, jnp.int32),
            (last_b, jnp.int32),
            (pos_b, jnp.int32),
            (seeds_b, jnp.uint32),
            (temps_b, jnp.float32),
            (top_ps_b, jnp.float32),
        )
    ]
    with self.rules:
      toks, lps, routing, self.cache = self._block_jit(
          params, self.cache, *args
      )
    return BlockOut(
        np.asarray(toks),
        np.asarray(lps),
        None if routing is None else np.asarray(routing),
    )

  # Jitted bodies.

  def _prefill(self, params, tokens, length):
    positions = jnp.arange(tokens.shape[1])[None]
    segments = (positions < length).astype(jnp.int32)
    _, cache, routing = sampler_lib.run_mode(
        self._prefill_mode,
        params,
        self._prefill_mode['cache'],
        tokens,
        positions,
        segments,
    )
    return cache, routing

  def _install(self, cache, pcache, slot, length):
    def put(path, dst, src):
      name, ax = _leaf(path, self._axes)
      if name not in ('cached_prefill_key', 'cached_prefill_value'):
        return dst
      row = ax.row(dst, slot)  # [S, ...] of this slot
      src_row = ax.row(src, 0)
      if ax.kind == 'kv':
        row = jax.lax.dynamic_update_slice_in_dim(
            row, src_row.astype(row.dtype), 0, 0
        )
      return ax.set_row(dst, slot, row)

    cache = jax.tree_util.tree_map_with_path(put, cache, pcache)
    return self._admit(cache, slot, length)

  def _admit(self, cache, slot, keep):
    def put(path, x):
      name, ax = _leaf(path, self._axes)
      if name not in ('cache_prefill_segment_id', 'cache_ar_segment_id'):
        return x
      row = ax.row(x, slot)
      limit = keep if 'prefill' in name else 0
      return ax.set_row(x, slot, jnp.where(_span(row, 0, limit), 1, 0 * row))

    return jax.tree_util.tree_map_with_path(put, cache)

  def _commit(self, cache, slot, ring_start, n, dst):
    window = self.ring_len
    start = jnp.minimum(dst, self.max_context - window)
    shift = dst - start
    flat = dict(_flat(cache))
    out = {}
    for path, x in flat.items():
      name, ax = _leaf(path, self._axes)
      if name in ('cached_prefill_key', 'cached_prefill_value'):
        ring_name = name.replace('prefill', 'ar')
        ring_path = path[:-1] + (jax.tree_util.DictKey(ring_name),)
        src = ax.row(flat[ring_path], slot)
        src = jnp.roll(jnp.roll(src, -ring_start, axis=0), shift, axis=0)
        row = ax.row(x, slot)
        win = jax.lax.dynamic_slice_in_dim(row, start, window, 0)
        win = jnp.where(
            _span(win, shift, shift + n), src.astype(win.dtype), win
        )
        row = jax.lax.dynamic_update_slice_in_dim(row, win, start, 0)
        out[path] = ax.set_row(x, slot, row)
      elif name == 'cache_prefill_segment_id':
        row = ax.row(x, slot)
        row = jnp.where(_span(row, dst, dst + n), 1, row)
        out[path] = ax.set_row(x, slot, row)
      else:
        out[path] = x
    return _unflat(cache, out)

  def _copy(self, cache, src, dst, keep):
    def put(path, x):
      name, ax = _leaf(path, self._axes)
      if name in ('cached_prefill_key', 'cached_prefill_value'):
        return ax.set_row(x, dst, ax.row(x, src))
      return x

    cache = jax.tree_util.tree_map_with_path(put, cache)
    return self._admit(cache, dst, keep)

  def _block(self, params, cache, forced, n_forced, last, pos0, seeds, temps,
             top_ps):  # fmt: skip
    keys = jax.vmap(jax.random.PRNGKey)(seeds)

    def draw(key, logits_v, temp, top_p):
      tok, lp = sampling.sample(key, logits_v[None], temp, top_p)
      return tok[0], lp[0]

    def draw_all(step_keys, logits_bv):
      # top_p = 1 on every row (RL): skip the nucleus sort.
      return jax.vmap(_draw_full)(step_keys, logits_bv, temps)

    def draw_nucleus(step_keys, logits_bv):
      return jax.vmap(draw)(step_keys, logits_bv, temps, top_ps)

    def step(carry, s):
      cache, prev = carry
      tok_in = jnp.where(s < n_forced, forced[:, s], prev)
      pos = pos0 + s
      logits, cache, routing = sampler_lib.run_mode(
          self._decode_mode,
          params,
          cache,
          tok_in[:, None],
          pos[:, None],
          None,
      )
      step_keys = jax.vmap(jax.random.fold_in)(keys, pos)
      tok, lp = jax.lax.cond(
          jnp.all(top_ps >= 1.0),
          draw_all,
          draw_nucleus,
          step_keys,
          logits[:, 0],
      )
      routing = None if routing is None else routing[:, 0]
      return (cache, tok), (tok, lp, routing)

    (cache, _), (toks, lps, routing) = jax.lax.scan(
        step, (cache, last), jnp.arange(self.steps)
    )
    toks, lps = toks.T, lps.T
    if routing is not None:
      routing = jnp.swapaxes(routing, 0, 1)
    return toks, lps, routing, cache


def _draw_full(key, logits_v, temp):
  """`sampling.sample` at top_p = 1, without its sort: a draw from
  softmax(logits / T) (argmax at T <= 0) and its log-probability under it.
  (sampling.top_p_mask at top_p = 1 may also drop a tail whose cumulative
  float32 mass rounds to 1; this keeps every token.)"""
  logits_v = logits_v.astype(jnp.float32)
  greedy = temp <= 0
  scaled = logits_v / jnp.where(greedy, 1.0, temp)
  logp = jax.nn.log_softmax(scaled)
  tok = jnp.where(
      greedy, jnp.argmax(logits_v), jax.random.categorical(key, scaled)
  )
  return tok.astype(jnp.int32), logp[tok]


def _bucket(n: int) -> int:
  """Padded prefill length: a power of two >= 128 (few compiles)."""
  b = 128
  while b < n:
    b *= 2
  return b


@dataclasses.dataclass(frozen=True)
class _Axes:
  """Where a cache leaf keeps its slot (batch) and sequence axes.

  Axes are counted from the end (leading axes are scanned layers).
  """

  kind: str  # 'kv' or 'seg'
  batch: int
  seq: int

  def _seq_in_row(self, ndim: int) -> int:
    b, s = ndim + self.batch, ndim + self.seq
    return s if s < b else s - 1

  def row(self, x, slot):
    """[seq, rest...] of one slot."""
    r = jax.lax.dynamic_index_in_dim(x, slot, x.ndim + self.batch, False)
    return jnp.moveaxis(r, self._seq_in_row(x.ndim), 0)

  def set_row(self, x, slot, row):
    r = jnp.moveaxis(row, 0, self._seq_in_row(x.ndim))
    return jax.lax.dynamic_update_index_in_dim(
        x, r.astype(x.dtype), slot, x.ndim + self.batch
    )


def _span(row, lo, hi):
  """True for row entries lo..hi-1 (broadcast over row's trailing axes)."""
  ids = jnp.arange(row.shape[0]).reshape((-1,) + (1,) * (row.ndim - 1))
  return (ids >= lo) & (ids < hi)


def _cache_axes(mt_config) -> dict[str, _Axes]:
  """Axes of each cache leaf name, from MaxText's cache axis orders."""

  def kv(order: str) -> _Axes:
    o = tuple(int(i) for i in str(order).split(','))
    # cache dims = logical (batch, seq, heads, kv) permuted by `o`.
    return _Axes('kv', o.index(0) - 4, o.index(1) - 4)

  seg = _Axes('seg', -2, -1)
  prefill = kv(mt_config.prefill_cache_axis_order)
  ar = kv(mt_config.ar_cache_axis_order)
  return {
      'cached_prefill_key': prefill,
      'cached_prefill_value': prefill,
      'cached_ar_key': ar,
      'cached_ar_value': ar,
      'cache_prefill_segment_id': seg,
      'cache_ar_segment_id': seg,
  }


def _leaf(path, axes) -> tuple[str | None, _Axes | None]:
  name = str(getattr(path[-1], 'key', path[-1]))
  if name.endswith('_scale'):
    raise NotImplementedError('quantized KV caches are not supported')
  return (name, axes[name]) if name in axes else (None, None)


def _flat(tree):
  return [
      (tuple(p), x) for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]
  ]


def _unflat(tree, flat: dict):
  leaves = [
      flat[tuple(p)] for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]
  ]
  return jax.tree_util.tree_unflatten(
      jax.tree_util.tree_structure(tree), leaves
  )
