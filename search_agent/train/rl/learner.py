"""The learner step: pack ready groups, accumulate sums, divide once.

`pack_update` turns the groups of one optimizer update into padded
microbatches; `update_gradients` streams them through any model that maps
(params, tokens_bt[, valid_bt, routing_btlk]) to token-aligned logprobs
(the MaxText model replays the recorded routing), adding the UNNORMALIZED
gradient of the surrogate sum and the eligible-token count, and divides by
the shared denominator once the full update is assembled.
"""

import dataclasses
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import token_exact

LogprobFn = Callable[..., jax.Array]
"""(params, tokens_bt, **extras) -> logprobs_bt, position t = log p(token_t |
<t); extras (`Microbatch.extras`) are valid_bt and routing_btlk when the
trajectories carry a routing record."""


class SequenceTooLongError(ValueError):
  """A trajectory does not fit the packed sequence length."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Microbatch:
  """Padded arrays of `batch_size` trajectories.

  Attributes:
    tokens_bt: Token ids (pad 0).
    batch: The loss inputs (pad rows/positions carry no loss).
    valid_bt: 1 on real tokens, 0 on padding (None when not routed).
    routing_btlk: Recorded experts of each input position [b, t, layers,
      top_k] (padding: experts 0..k-1), or None without a routing record.
    rows: Trajectories packed (the rest of the batch is padding).
  """

  tokens_bt: np.ndarray
  batch: loss_lib.LossBatch
  valid_bt: np.ndarray | None = None
  routing_btlk: np.ndarray | None = None
  rows: int = 0

  @property
  def extras(self) -> dict[str, np.ndarray]:
    if self.routing_btlk is None:
      return {}
    return {'valid_bt': self.valid_bt, 'routing_btlk': self.routing_btlk}


def routing_array(rec, seq_len: int) -> np.ndarray | None:
  """A record's routing as [seq_len, layers, top_k] int32 (None if absent).

  The sampler records the experts of every position it fed the model: all
  but the last token. Padding positions get experts 0..k-1.
  """
  if rec.routed_experts is None:
    return None
  r = token_exact.decode_routing(rec.routed_experts)
  n = len(rec.token_ids)
  if r.ndim != 3 or r.shape[0] not in (n - 1, n):
    raise ValueError(
        f'routing record of shape {r.shape} does not cover {n} tokens'
    )
  out = np.broadcast_to(
      np.arange(r.shape[2], dtype=np.int32), (seq_len,) + r.shape[1:]
  ).copy()
  out[: r.shape[0]] = r
  return out


def pack_update(
    groups: Sequence[rollout_groups.RolloutGroup],
    *,
    seq_len: int,
    batch_size: int,
    adv_cfg: adv_lib.AdvantageConfig = adv_lib.AdvantageConfig(),
) -> list[Microbatch]:
  """Packs every trajectory of `groups` with its group advantage.

  Routing is replayed per row: trajectories with a routing record are packed
  into microbatches that replay it, the others (a record lost or never
  captured) into microbatches the router routes itself, so one unrouted
  trajectory never turns replay off for the rest of the update
  (`unrouted_rows` counts them).
  """
  rows = []
  for g in groups:
    adv = adv_lib.group_advantages(g.rewards, adv_cfg)
    for t, a in zip(g.trajectories, adv):
      for k, seg in enumerate(t.segments):  # each with the rollout's advantage
        if len(seg.token_ids) > seq_len:
          raise SequenceTooLongError(
              f'{t.trajectory_id} segment {k} has {len(seg.token_ids)}'
              f' tokens > seq_len {seq_len}; raise seq_len (nothing is'
              ' truncated)'
          )
        rows.append((seg, a))
  routed = [r for r in rows if r[0].routed_experts is not None]
  plain = [r for r in rows if r[0].routed_experts is None]
  return [
      *_pack(routed, seq_len, batch_size, routed=True),
      *_pack(plain, seq_len, batch_size, routed=False),
  ]


def unrouted_rows(microbatches: Sequence[Microbatch]) -> int:
  """Trajectories packed without a routing record to replay."""
  return sum(mb.rows for mb in microbatches if mb.routing_btlk is None)


def blank(
    rows: int, seq_len: int, routing_lk: tuple[int, int] | None = None
) -> Microbatch:
  """`rows` padding rows: token 0, no loss, sampling logprob 0, version -1,
  advantage 0; where routing is replayed (`routing_lk` = (layers, top_k)),
  not valid and experts 0..k-1. They add nothing to any sum; `_pack` fills
  them in and a short microbatch keeps the rest."""
  shape = (rows, seq_len)
  valid, routes = None, None
  if routing_lk is not None:
    valid = np.zeros(shape, np.int32)
    k = routing_lk[-1]
    routes = np.broadcast_to(
        np.arange(k, dtype=np.int32), shape + tuple(routing_lk)
    ).copy()
  return Microbatch(
      tokens_bt=np.zeros(shape, np.int32),
      batch=loss_lib.LossBatch(
          loss_mask_bt=np.zeros(shape, np.int32),
          gen_logprobs_bt=np.zeros(shape, np.float32),
          versions_bt=np.full(shape, -1, np.int32),
          advantages_b=np.zeros((rows,), np.float32),
      ),
      valid_bt=valid,
      routing_btlk=routes,
      rows=0,
  )


def padding(mb: Microbatch) -> Microbatch:
  """One padding row (`blank`) shaped as `mb`'s rows."""
  routing = mb.routing_btlk
  return blank(
      1, mb.tokens_bt.shape[1], None if routing is None else routing.shape[2:]
  )


def pad_rows(mb: Microbatch, n: int) -> Microbatch:
  """`mb` with padding rows (`padding`) appended up to `n` rows."""
  b = mb.tokens_bt.shape[0]
  if n < b:
    raise ValueError(f'cannot pad a microbatch of {b} rows to {n}')

  def pad(x, fill):
    if x is None:
      return None
    return np.concatenate([x, np.broadcast_to(fill, (n - b,) + x.shape[1:])])

  fill = padding(mb)
  return dataclasses.replace(
      mb,
      tokens_bt=pad(mb.tokens_bt, fill.tokens_bt),
      batch=loss_lib.LossBatch(*map(pad, mb.batch, fill.batch)),
      valid_bt=pad(mb.valid_bt, fill.valid_bt),
      routing_btlk=pad(mb.routing_btlk, fill.routing_btlk),
  )


def _pack(rows, seq_len: int, batch_size: int, *, routed: bool):
  out = []
  for start in range(0, len(rows), batch_size):
    chunk = rows[start : start + batch_size]
    routing = (
        [routing_array(rec, seq_len) for rec, _ in chunk] if routed else []
    )
    mb = blank(batch_size, seq_len, routing[0].shape[1:] if routing else None)
    b = mb.batch
    for i, (rec, a) in enumerate(chunk):
      n = len(rec.token_ids)
      mb.tokens_bt[i, :n], b.loss_mask_bt[i, :n] = rec.token_ids, rec.loss_mask
      b.gen_logprobs_bt[i, :n], b.versions_bt[i, :n] = (
          rec.logprobs,
          rec.versions,
      )
      b.advantages_b[i] = a
      if routed:
        mb.valid_bt[i, :n] = 1
        mb.routing_btlk[i] = routing[i]
    out.append(dataclasses.replace(mb, rows=len(chunk)))
  return out


def microbatch_sums(
    logprob_fn: LogprobFn,
    params: Any,
    tokens_bt: jax.Array,
    batch: loss_lib.LossBatch,
    version: int,
    cfg: loss_lib.PolicyLossConfig,
    ref_params: Any = None,
    extras: dict[str, jax.Array] | None = None,
) -> tuple[Any, loss_lib.LossSums]:
  """Gradient of the objective SUM of one microbatch, and its sums."""
  extras = extras or {}
  if cfg.objective == 'grpo_clip':
    ref_bt = jax.lax.stop_gradient(logprob_fn(ref_params, tokens_bt, **extras))

  def objective(p):
    lp = logprob_fn(p, tokens_bt, **extras)
    if cfg.objective == 'grpo_clip':
      sums = loss_lib.clipped_loss_sums(lp, ref_bt, batch, version, cfg)
    else:
      sums = loss_lib.loss_sums(lp, batch, version, cfg)
    return sums.objective, sums

  return jax.grad(objective, has_aux=True)(params)


class GradientSums:
  """Adds UNNORMALIZED gradient sums of microbatches; divides once."""

  def __init__(
      self,
      logprob_fn: LogprobFn,
      cfg: loss_lib.PolicyLossConfig = loss_lib.PolicyLossConfig(),
  ):
    self.cfg = cfg
    self._logprob_fn = logprob_fn
    self._step = jax.jit(microbatch_sums, static_argnums=(0, 5))
    self.grads, self.sums = None, None

  def add(
      self,
      params: Any,
      microbatches: Sequence[Microbatch],
      version: int,
      ref_params: Any = None,
  ) -> None:
    """Accumulates the sums of `microbatches` at learner version `version`."""
    if self.cfg.objective == 'grpo_clip' and ref_params is None:
      raise ValueError('objective grpo_clip needs ref_params')
    for mb in microbatches:
      g, s = self._step(
          self._logprob_fn,
          params,
          mb.tokens_bt,
          mb.batch,
          version,
          self.cfg,
          ref_params,
          mb.extras,
      )
      self.grads = (
          g if self.grads is None else jax.tree.map(jnp.add, self.grads, g)
      )
      self.sums = s if self.sums is None else loss_lib.add_sums(self.sums, s)

  def result(self) -> tuple[Any, dict[str, jax.Array]]:
    """(gradient of the loss -sum/N, metrics) of everything added."""
    if self.grads is None:
      raise ValueError('an update needs at least one microbatch')
    n = jnp.maximum(self.sums.tokens, 1.0)
    return jax.tree.map(lambda x: -x / n, self.grads), loss_lib.finalize(
        self.sums
    )


def update_gradients(
    logprob_fn: LogprobFn,
    params: Any,
    microbatches: Sequence[Microbatch],
    version: int,
    cfg: loss_lib.PolicyLossConfig = loss_lib.PolicyLossConfig(),
    ref_params: Any = None,
) -> tuple[Any, dict[str, jax.Array]]:
  """Gradient of L_PG over a whole update, normalized once.

  `ref_params` (the frozen reference policy) is needed by 'grpo_clip' only.

  Returns:
    (grads of the loss -sum/N, metrics from `loss.finalize`).
  """
  acc = GradientSums(logprob_fn, cfg)
  acc.add(params, microbatches, version, ref_params)
  return acc.result()
