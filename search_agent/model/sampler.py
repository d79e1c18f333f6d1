"""In-process batched sampler on MaxText's KV cache.

Each prompt is prefilled alone (MaxText's prefill mode, batch 1, right-padded
to `max_prompt_len`) and its prefill cache is inserted into its row of the
batched decode cache; all rows then decode together, one token per step
(MaxText's autoregressive mode). Per generated token we keep the sampling
log-probability (under softmax(logits / temperature), the distribution the
token was drawn from; the raw model log-prob when temperature is 0 or 1), the
policy version of the weights, and the experts every MoE layer routed it to.

Token level only: prompts are token ids, stops are token ids or strings
checked on the decoded text (`decode_fn`); the model knows nothing of chat.
"""

import dataclasses
from typing import Any, Callable, Sequence

from flax import nnx
import jax
import jax.numpy as jnp
from maxtext.utils import maxtext_utils
from maxtext.utils import model_creation_utils
import numpy as np

from search_agent.model import config as config_lib
from search_agent.model import maxtext_model
from search_agent.model import mesh as mesh_lib
from search_agent.model import sampling


class SamplerError(ValueError):
  """A request does not fit the sampler (prompt too long, batch too big)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sample:
  """One generated continuation.

  Attributes:
    token_ids: Generated tokens (the stop token or string included).
    logprobs: Sampling log-probability of each generated token.
    finish_reason: 'stop' (a stop token or string) or 'length'.
    policy_version: Version of the weights that generated every token.
    routed_experts: [prompt + generated tokens, layers, top_k] experts.
  """

  token_ids: tuple[int, ...]
  logprobs: tuple[float, ...]
  finish_reason: str
  policy_version: int
  routed_experts: np.ndarray | None


class Sampler:
  """Batched generation with a KV cache for one model configuration."""

  def __init__(
      self,
      cfg: config_lib.ModelConfig,
      layout: mesh_lib.Parallelism,
      *,
      batch_size: int,
      max_prompt_len: int,
      max_new_tokens: int,
      devices: list[jax.Device] | None = None,
  ):
    devices = devices or jax.devices()
    self.batch_size = batch_size
    self.max_prompt_len = max_prompt_len
    self.max_new_tokens = max_new_tokens
    cfg = dataclasses.replace(
        cfg, max_target_length=max_prompt_len + max_new_tokens
    )
    self._record = cfg.supports_replay
    self.mt_config = maxtext_model.maxtext_config(
        cfg,
        layout,
        len(devices),
        per_device_batch_size=batch_size / len(devices),
        max_prefill_predict_length=max_prompt_len,
        model_call_mode='inference',
        return_routed_experts=self._record,
    )
    self.mesh = maxtext_utils.get_mesh_from_config(self.mt_config, devices)
    self._prefill = split_mode(self.mt_config, self.mesh, 'prefill')
    self._decode = split_mode(self.mt_config, self.mesh, 'autoregressive')
    self._rules = maxtext_model.MeshAndRules(
        self.mesh, self.mt_config.logical_axis_rules
    )
    self._prefill_fn = jax.jit(self._prefill_step)
    self._decode_fn = jax.jit(self._decode_step)
    self.params = None
    self.policy_version = -1

  def abstract_params(self) -> Any:
    """Shapes, dtypes and shardings of the weights (a restore target)."""
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        self._prefill['params'],
    )

  def set_params(self, params: Any, policy_version: int) -> None:
    """Installs new weights (a trained model's params) and their version."""
    shardings = jax.tree.map(lambda x: x.sharding, self._prefill['params'])
    self.params = jax.device_put(params, shardings)
    self.policy_version = policy_version

  def _prefill_step(self, params, tokens, length):
    p = tokens.shape[1]
    positions = jnp.arange(p)[None]
    segments = (positions < length).astype(jnp.int32)
    cache = self._prefill['cache']
    logits, cache, routing = run_mode(
        self._prefill, params, cache, tokens, positions, segments
    )
    return logits[0, length - 1], cache, routing

  def _decode_step(self, params, cache, tokens, positions, key, temp, top_p):
    logits, cache, routing = run_mode(
        self._decode, params, cache, tokens, positions, None
    )
    token, logprob = sampling.sample(key, logits[:, 0], temp, top_p)
    return token, logprob, cache, routing

  def generate(
      self,
      prompts: Sequence[Sequence[int]],
      *,
      temperature: float = 1.0,
      top_p: float = 1.0,
      max_new_tokens: int | None = None,
      stop_token_ids: Sequence[int] = (),
      stop_strings: Sequence[str] = (),
      decode_fn: Callable[[list[int]], str] | None = None,
      seed: int = 0,
  ) -> list[Sample]:
    """Generates one continuation per prompt (at most batch_size prompts)."""
    self._check(prompts, stop_strings, decode_fn)
    limit = min(max_new_tokens or self.max_new_tokens, self.max_new_tokens)
    key = jax.random.PRNGKey(seed)
    temp = jnp.float32(temperature)
    tp = jnp.float32(top_p)
    with self._rules:
      cache, first, prompt_routes = self._prefill_all(prompts, key, temp, tp)
      rows = [_Row(len(p)) for p in prompts]
      token = first
      for step in range(limit):
        tok_np, lp_np = np.asarray(token[0]), np.asarray(token[1])
        for i, row in enumerate(rows):
          row.add(
              int(tok_np[i]),
              float(lp_np[i]),
              stop_token_ids,
              stop_strings,
              decode_fn,
              limit,
          )
        if all(r.done for r in rows) or step == limit - 1:
          break
        positions = jnp.asarray(
            [[r.prompt_len + step] for r in rows]
            + [[0]] * (self.batch_size - len(rows))
        )
        tokens = jnp.zeros((self.batch_size, 1), jnp.int32)
        tokens = tokens.at[: len(rows), 0].set(tok_np[: len(rows)])
        key, sub = jax.random.split(key)
        tk, lp, cache, routing = self._decode_fn(
            self.params, cache, tokens, positions, sub, temp, tp
        )
        token = (tk, lp)
        for i, row in enumerate(rows):
          if routing is not None and not row.done:
            row.routes.append(np.asarray(routing[i, 0]))
    return [
        r.finish(self.policy_version, prompt_routes[i])
        for i, r in enumerate(rows)
    ]

  def _check(self, prompts, stop_strings, decode_fn):
    if self.params is None:
      raise SamplerError('no weights: call set_params(params, version)')
    if not 0 < len(prompts) <= self.batch_size:
      raise SamplerError(
          f'{len(prompts)} prompts; this sampler takes 1..{self.batch_size}'
      )
    for p in prompts:
      if not 0 < len(p) <= self.max_prompt_len:
        raise SamplerError(
            f'prompt of {len(p)} tokens; max_prompt_len is'
            f' {self.max_prompt_len}'
        )
    if stop_strings and decode_fn is None:
      raise SamplerError('stop_strings need a decode_fn (ids -> text)')

  def _prefill_all(self, prompts, key, temp, top_p):
    """Prefills every prompt into its row; samples each first token."""
    cache = self._decode['cache']
    firsts, lps, routes = [], [], []
    for i, prompt in enumerate(prompts):
      toks = np.zeros((1, self.max_prompt_len), np.int32)
      toks[0, : len(prompt)] = prompt
      logits, pcache, routing = self._prefill_fn(
          self.params, jnp.asarray(toks), len(prompt)
      )
      cache = _insert(cache, pcache, i)
      key, sub = jax.random.split(key)
      t, lp = sampling.sample(sub, logits[None], temp, top_p)
      firsts.append(int(t[0]))
      lps.append(float(lp[0]))
      routes.append(
          None if routing is None else np.asarray(routing[0, : len(prompt)])
      )
    pad = self.batch_size - len(prompts)
    first = (np.asarray(firsts + [0] * pad), np.asarray(lps + [0.0] * pad))
    return cache, first, routes


class _Row:
  """Host-side state of one generated row."""

  def __init__(self, prompt_len: int):
    self.prompt_len = prompt_len
    self.tokens: list[int] = []
    self.logprobs: list[float] = []
    self.routes: list[np.ndarray] = []
    self.done = False
    self.reason = 'length'

  def add(self, token, logprob, stop_ids, stop_strings, decode_fn, limit):
    if self.done:
      return
    self.tokens.append(token)
    self.logprobs.append(logprob)
    if token in stop_ids or (
        stop_strings and _ends_with_stop(self.tokens, stop_strings, decode_fn)
    ):
      self.done, self.reason = True, 'stop'
    elif len(self.tokens) >= limit:
      self.done = True

  def finish(self, version, prompt_routes) -> Sample:
    routes = None
    if prompt_routes is not None:
      # The last generated token was never fed back: it has no routing.
      gen = self.routes[: max(len(self.tokens) - 1, 0)]
      routes = np.concatenate([prompt_routes] + [r[None] for r in gen])
    return Sample(
        token_ids=tuple(self.tokens),
        logprobs=tuple(self.logprobs),
        finish_reason=self.reason,
        policy_version=version,
        routed_experts=routes,
    )


def _ends_with_stop(tokens, stop_strings, decode_fn) -> bool:
  # The newest token may decode to several characters past the stop string.
  tail = decode_fn(tokens[-64:])
  return any(s in tail[-(len(s) + 16) :] for s in stop_strings)


def split_mode(mt_config, mesh, mode: str, *, with_cache: bool = True) -> dict:
  """A mode's graph, zeroed cache, RNG state and abstract params (weights
  come from set_params: none are initialized, XLA drops their init).

  `with_cache=False`: no cache is made ('cache' is None; the caller brings
  its own), so none is allocated, not even for a moment.
  """
  create_fn, abstract = model_creation_utils.create_nnx_abstract_model(
      mt_config, mesh, model_mode=mode
  )
  graphdef, params, cache, rest = nnx.split(abstract, nnx.Param, nnx.Cache, ...)
  shardings = jax.tree.map(
      lambda x: x.sharding,
      (cache, rest),
      is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct),
  )
  with maxtext_model.MeshAndRules(mesh, mt_config.logical_axis_rules):
    if with_cache:
      cache, rest = jax.jit(
          lambda: nnx.state(create_fn(), nnx.Param, nnx.Cache, ...)[1:],
          out_shardings=shardings,
      )()
    else:
      cache = None
      rest = jax.jit(
          lambda: nnx.state(create_fn(), nnx.Param, nnx.Cache, ...)[2],
          out_shardings=shardings[1],
      )()
  return {
      'name': mode,
      'graphdef': graphdef,
      'params': nnx.to_pure_dict(params),
      'cache': None if cache is None else nnx.to_pure_dict(cache),
      'rest': rest,
  }


def _insert(cache, prefill_cache, slot: int):
  """Copies a batch-1 prefill cache into row `slot` of the decode cache.

  Only the prefill part (keys, values, segment ids) is copied; the batch axis
  is the one where the two shapes differ (the whole leaf when batch is 1).
  """

  def put(path, dst, src):
    name = str(getattr(path[-1], 'key', path[-1]))
    if 'prefill' not in name:
      return dst
    if dst.shape == src.shape:
      return src.astype(dst.dtype)
    axis = next(
        a for a, (d, s) in enumerate(zip(dst.shape, src.shape)) if d != s
    )
    return jax.lax.dynamic_update_index_in_dim(
        dst, jnp.take(src, 0, axis=axis).astype(dst.dtype), slot, axis
    )

  return jax.tree_util.tree_map_with_path(put, cache, prefill_cache)


def run_mode(mode: dict, params, cache, tokens, positions, segments):
  """One forward of a `split_mode` graph: (logits, updated cache, routing
  record [batch, tokens, layers, top_k] or None)."""
  model = nnx.merge(mode['graphdef'], params, cache, mode['rest'], copy=True)
  logits = model(
      decoder_input_tokens=tokens,
      decoder_positions=positions,
      decoder_segment_ids=segments,
      enable_dropout=False,
      model_mode=mode['name'],
  )
  inter = nnx.pop(model, nnx.Intermediate)
  routing = [
      (path, v.get_value())
      for path, v in inter.flat_state()
      if str(path[-1]) == maxtext_model.ROUTING_KEY
  ]
  routing = maxtext_model.stack_routing(routing, tokens.shape)
  return logits, nnx.to_pure_dict(nnx.state(model, nnx.Cache)), routing
