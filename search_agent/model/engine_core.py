"""Device side of the rollout engine: fixed decode slots on MaxText's KV cache.

MaxText's decode cache has, per batch row (a *slot*), a prefill region of
`max_context` entries and an autoregressive (AR) ring of `ring_len` entries
written at one global index that every decode step advances. A slot keeps
its session's context in the prefill region (entries 0..L-1, segment id 1).
A request's new prompt tokens but the last are appended there by `extend`
(one forward for several slots: MaxText's prefill-mode graph on the slots'
gathered context rows, writing at a dynamic offset, see
`extend_attention`); its last prompt token and its generated tokens go one
per decode step into the ring (`decode_block`, K steps per device call,
sampling on device, on the busy slots only, gathered into a power-of-two
batch); when the request ends, `commit` moves its ring entries after the
context in the prefill region. Keys are stored after RoPE and attention in
decode mode masks by segment id only, so where an entry sits does not
change the result. A fresh long prompt is instead computed in MaxText's
prefill mode (one batch-1 forward, padded to a power-of-two bucket) and
installed into the slot (`install`).

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
from search_agent.model import extend_attention
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
    top_ids_bkn: The n most likely tokens at each step (n = the core's
      top_logprobs), or None when it is 0.
    top_logprobs_bkn: Their log-probabilities, under the distribution the
      sampled token's is under.
  """

  tokens_bk: np.ndarray
  logprobs_bk: np.ndarray
  routing_bkle: np.ndarray | None
  top_ids_bkn: np.ndarray | None = None
  top_logprobs_bkn: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class ExtendOut:
  """Outputs of one extend forward (host numpy arrays), per row.

  Attributes:
    logits_rv: Logits after each row's last new token.
    routing: Experts each new token was routed to [n, layers, top_k] per
      row, or Nones.
    padded_tokens: Tokens computed, padding included (rows x width summed
      over the forwards).
  """

  logits_rv: np.ndarray
  routing: list
  padded_tokens: int = 0


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
      max_extend: int | None = None,
      extend_budget: int = 2048,
      top_logprobs: int = 0,
      devices: list[jax.Device] | None = None,
  ):
    devices = devices or jax.devices()
    if ring_len > max_context:
      raise ValueError(
          f'ring_len {ring_len} > max_context {max_context}: a turn must fit'
          ' the prefill region it is committed into'
      )
    self.slots, self.max_context, self.ring_len = slots, max_context, ring_len
    self.ring = 0  # the AR ring entry the next decode step writes (all rows)
    self.steps = steps_per_call
    self.top_logprobs = top_logprobs  # alternatives per step (0: none)
    max_extend = max_extend or ring_len
    cfg = dataclasses.replace(cfg, max_target_length=max_context + ring_len)
    self.record_routing = cfg.supports_replay
    self._n_devices = len(devices)

    def mt_config(rows: int):
      return maxtext_model.maxtext_config(
          cfg,
          layout,
          len(devices),
          per_device_batch_size=rows / len(devices),
          max_prefill_predict_length=max_context,
          model_call_mode='inference',
          return_routed_experts=self.record_routing,
      )

    self._mt_config_for = mt_config
    self.mt_config = mt_config(slots)
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
    # Decode graphs by row count (MaxText's decode cache sizes some updates
    # by its configured batch); the rows come from self.cache.
    self._decode_modes = {slots: self._decode_mode}
    self._prefill_jit = jax.jit(self._prefill)
    self._install_jit = jax.jit(self._install, donate_argnums=0)
    self._admit_jit = jax.jit(self._admit, donate_argnums=0)
    self._commit_jit = jax.jit(self._commit, donate_argnums=0)
    self._copy_jit = jax.jit(self._copy, donate_argnums=0)
    self._extend_jit = jax.jit(self._extend, donate_argnums=1)
    self.max_extend = min(_bucket(max_extend, 16), max_context)
    self.extend_budget = extend_budget
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

  def extend(self, params, rows) -> 'ExtendOut':
    """Appends tokens to several slots' contexts, batched in few forwards.

    rows: (slot, offset, token_ids): the KV of token_ids goes to the slot's
    context entries offset.., each token attending to entries 0..offset-1
    and causally to the tokens before it, as if fed one per decode step.
    A row is cut into pieces of at most `max_extend` tokens whose padded
    width fits `extend_budget` (piece r of every row in round r); a round's
    rows are padded to a power-of-four count and their tokens to a
    power-of-two width, and split into forwards of at most `extend_budget`
    padded tokens (it bounds the attention weights, [rows, heads, width,
    max_context]; one row of 16 tokens at the least).
    """
    if len({s for s, _, _ in rows}) < len(rows):
      raise ValueError('extend of one slot twice in one call')
    piece = self.max_extend
    while piece > 16 and self.extend_width(piece) > self.extend_budget:
      piece = (piece + 1) // 2
    logits = [None] * len(rows)
    routes = [[] for _ in rows]
    r = padded = 0
    while True:
      lo, hi = r * piece, (r + 1) * piece
      todo = [(i, s, off + lo, t[lo:hi])
              for i, (s, off, t) in enumerate(rows) if len(t) > lo]  # fmt: skip
      if not todo:
        break
      width = self.extend_width(max(len(t) for *_, t in todo))
      per = 1  # rows per forward: a power of four (a padding-free bucket)
      while per * 4 * width <= self.extend_budget:
        per *= 4
      for k in range(0, len(todo), per):
        group = todo[k : k + per]
        lg, rt, size = self._extend_call(params, [g[1:] for g in group])
        padded += size
        for (i, *_), lv, rv in zip(group, lg, rt):
          logits[i] = lv
          routes[i].append(rv)
      r += 1
    if any(x is None for xs in routes for x in xs):
      return ExtendOut(np.stack(logits), [None] * len(rows), padded)
    return ExtendOut(
        np.stack(logits), [np.concatenate(x) for x in routes], padded
    )

  def _extend_call(self, params, rows):
    """One extend forward of rows (each at most max_extend tokens): last
    logits, routing per row, tokens computed (padding included)."""
    n = max(len(t) for _, _, t in rows)
    e = min(_bucket(len(rows), 1, 4), self.slots)
    width = self.extend_width(n)
    used = {s for s, _, _ in rows}
    pad = [i for i in range(self.slots) if i not in used][: e - len(rows)]
    slots = np.asarray([s for s, _, _ in rows] + pad, np.int32)
    offsets, lengths = np.zeros(e, np.int32), np.zeros(e, np.int32)
    toks = np.zeros((e, width), np.int32)
    for i, (_, off, t) in enumerate(rows):
      offsets[i], lengths[i], toks[i, : len(t)] = off, len(t), t
    with self.rules:
      self.cache, logits, routing = self._extend_jit(
          params, self.cache, *(jnp.asarray(a) for a in (slots, offsets,
                                                         lengths, toks))
      )  # fmt: skip
    logits = np.asarray(logits)
    if routing is None:
      return logits, [None] * len(rows), e * width
    routing = np.asarray(routing)
    routes = [routing[i, : len(t)] for i, (_, _, t) in enumerate(rows)]
    return logits, routes, e * width

  def decode_block(self, params, forced_bk, n_forced_b, last_b, pos_b, seeds_b,
                   temps_b, top_ps_b, active=None) -> BlockOut:  # fmt: skip
    """Runs `steps_per_call` decode steps on the `active` slots (all).

    Step s of slot b feeds forced_bk[b, s] while s < n_forced_b[b], else the
    token sampled at the previous step (last_b[b] at step 0), at position
    pos_b[b] + s. The active rows are gathered into a batch of the next
    `rows_bucket` size (padded with idle slots), decoded and scattered back;
    outputs of the other slots are zeros.
    """
    per_slot = (forced_bk, n_forced_b, last_b, pos_b, seeds_b, temps_b,
                top_ps_b)  # fmt: skip
    rows = self._rows(active)
    if rows is not None:
      per_slot = tuple(np.asarray(a)[rows] for a in per_slot)
    args = [
        jnp.asarray(a, dt)
        for a, dt in zip(per_slot, (
            jnp.int32, jnp.int32, jnp.int32, jnp.int32, jnp.uint32,
            jnp.float32, jnp.float32))
    ]  # fmt: skip
    with self.rules:
      outs, self.cache = self._block_jit(
          params, self.cache, None if rows is None else jnp.asarray(rows),
          *args,
      )  # fmt: skip
    self.ring = (self.ring + self.steps) % self.ring_len
    outs = [None if x is None else np.asarray(x) for x in outs]
    if rows is not None:
      outs = [
          None if x is None else _scatter_rows(x, rows, self.slots)
          for x in outs
      ]
    return BlockOut(*outs)

  def warmup(self, params, widths=None) -> None:
    """Compiles every decode batch and the extends of `widths` (all).

    Runs on the cache: call it before serving (the garbage it writes is
    reset when a request takes a slot: install, admit or copy_context).
    """
    n = self.slots
    z = np.zeros(n, np.int32)
    sizes = sorted({self.rows_bucket(k) for k in range(1, n + 1)})
    for b in sizes:
      self.decode_block(params, np.zeros((n, self.steps), np.int32), z, z, z,
                        z.astype(np.uint32), z.astype(np.float32),
                        np.ones(n, np.float32), list(range(b)))  # fmt: skip
    if widths is None:
      widths = [w for w in (16 * 2**k for k in range(16))
                if w <= self.max_extend]  # fmt: skip
    rows = sorted({min(_bucket(k, 1, 4), n) for k in range(1, n + 1)})
    for w in widths:
      for e in rows:
        self.extend(params, [(i, 0, [0] * w) for i in range(e)])

  def extend_width(self, n: int) -> int:
    """Padded token count of an extend of n tokens: 16 * 2**k."""
    return min(_bucket(max(n, 1), 16), self.max_extend)

  def rows_bucket(self, n: int) -> int:
    """Rows a decode block of n active slots runs: devices * 2**k."""
    return min(_bucket(max(n, 1), self._n_devices), self.slots)

  def _rows(self, active) -> np.ndarray | None:
    """Slots the block runs (None: all), creating its decode graph."""
    if active is None:
      return None
    active = sorted(active)
    b = self.rows_bucket(len(active))
    if b == self.slots:
      return None
    if b not in self._decode_modes:
      # No cache of its own (its rows come from self.cache): a zeroed one
      # would be on device next to self.cache while it is made.
      self._decode_modes[b] = sampler_lib.split_mode(
          self._mt_config_for(b), self.mesh, 'autoregressive',
          with_cache=False,
      )  # fmt: skip
    idle = [i for i in range(self.slots) if i not in set(active)]
    return np.asarray(active + idle[: b - len(active)], np.int32)

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

  def _extend(self, params, cache, slots, offsets, lengths, tokens):
    flat, pflat = dict(_flat(cache)), dict(_flat(self._prefill_mode['cache']))
    rows = {}
    for path, x in pflat.items():
      name, ax = _leaf(path, self._axes)
      rows[path] = ax.take(flat[path], slots) if name in _CONTEXT else x
    positions = offsets[:, None] + jnp.arange(tokens.shape[1])[None]
    segments = (jnp.arange(tokens.shape[1])[None] < lengths[:, None]).astype(
        jnp.int32
    )
    with extend_attention.extending(offsets, lengths):
      logits, rows_out, routing = sampler_lib.run_mode(
          self._prefill_mode,
          params,
          _unflat(self._prefill_mode['cache'], rows),
          tokens,
          positions,
          segments,
      )
    rows_out = dict(_flat(rows_out))
    out = {}
    for path, x in flat.items():
      name, ax = _leaf(path, self._axes)
      out[path] = ax.put(x, slots, rows_out[path]) if name in _CONTEXT else x
    last = jnp.take_along_axis(
        logits, jnp.maximum(lengths - 1, 0)[:, None, None], axis=1
    )[:, 0]
    return _unflat(cache, out), last, routing

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

  def _block(self, params, cache, rows, forced, n_forced, last, pos0, seeds,
             temps, top_ps):  # fmt: skip
    if rows is None:
      return self._steps(self._decode_mode, params, cache, forced, n_forced,
                         last, pos0, seeds, temps, top_ps)  # fmt: skip
    flat = dict(_flat(cache))
    sub = {}
    for path, x in flat.items():
      axis = _batch_axis(path, self._axes)
      sub[path] = x if axis is None else jnp.take(x, rows, axis=x.ndim + axis)
    outs, sub = self._steps(
        self._decode_modes[rows.shape[0]], params, _unflat(cache, sub),
        forced, n_forced, last, pos0, seeds, temps, top_ps,
    )  # fmt: skip
    sub = dict(_flat(sub))
    out = {}
    for path, x in flat.items():
      name = str(getattr(path[-1], 'key', path[-1]))
      axis = _batch_axis(path, self._axes)
      if name not in _RING:
        out[path] = x  # the context entries: read only
      elif axis is None:
        out[path] = sub[path]  # the ring index, shared by every row
      else:
        at = (slice(None),) * (x.ndim + axis) + (rows,)
        out[path] = x.at[at].set(sub[path])
    return outs, _unflat(cache, out)

  def _steps(self, mode, params, cache, forced, n_forced, last, pos0, seeds,
             temps, top_ps):  # fmt: skip
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
          mode,
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
      top = (None, None)
      if self.top_logprobs:
        top = _top_logprobs(logits[:, 0], temps, self.top_logprobs)
      return (cache, tok), (tok, lp, routing, *top)

    (cache, _), outs = jax.lax.scan(step, (cache, last), jnp.arange(self.steps))
    # [steps, rows, ...] -> [rows, steps, ...]
    outs = tuple(None if x is None else jnp.swapaxes(x, 0, 1) for x in outs)
    return outs, cache


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


def _top_logprobs(logits_bv, temps_b, n: int):
  """(top_ids [b, n], their logprobs [b, n]) under softmax(logits / T), the
  raw model distribution at T <= 0 (as the sampled token's logprob)."""
  logits_bv = logits_bv.astype(jnp.float32)
  t = jnp.where(temps_b <= 0, 1.0, temps_b)[:, None]
  lps, ids = jax.lax.top_k(jax.nn.log_softmax(logits_bv / t, axis=-1), n)
  return ids.astype(jnp.int32), lps


_RING = ('cached_ar_key', 'cached_ar_value', 'cache_ar_segment_id',
         'cached_ar_lengths', 'cache_ar_index')  # fmt: skip
_CONTEXT = ('cached_prefill_key', 'cached_prefill_value',
            'cache_prefill_segment_id')  # fmt: skip


def _bucket(n: int, lo: int = 128, base: int = 2) -> int:
  """Padded length: lo * base**k >= n (few compiles; prefill: 2**k >= 128)."""
  b = lo
  while b < n:
    b *= base
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

  def take(self, x, slots):
    """Rows `slots` of x (batch axis kept)."""
    return jnp.take(x, slots, axis=x.ndim + self.batch)

  def put(self, x, slots, rows):
    """x with rows `slots` replaced by `rows` (from `take`)."""
    at = (slice(None),) * (x.ndim + self.batch) + (slots,)
    return x.at[at].set(rows.astype(x.dtype))

  def set_row(self, x, slot, row):
    r = jnp.moveaxis(row, 0, self._seq_in_row(x.ndim))
    return jax.lax.dynamic_update_index_in_dim(
        x, r.astype(x.dtype), slot, x.ndim + self.batch
    )


def _batch_axis(path, axes) -> int | None:
  """The slot axis of a cache leaf (from the end), or None (shared)."""
  name, ax = _leaf(path, axes)
  if ax is not None:
    return ax.batch
  name = str(getattr(path[-1], 'key', path[-1]))
  return -1 if name == 'cached_ar_lengths' else None


def _scatter_rows(x, rows, slots):
  """Per-row outputs [len(rows), ...] placed at their slots."""
  out = np.zeros((slots,) + x.shape[1:], x.dtype)
  out[rows] = x
  return out


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
