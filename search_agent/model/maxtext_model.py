"""Builds MaxText models from a `ModelConfig` and runs their forward pass.

A built model is split once into a graph definition, its parameters and the
rest of its state (RNG counters); training and sampling pass parameters as
plain pytrees and re-merge inside jit. The forward returns the final hidden
states (MaxText's vocab-tiling mode), never the full logits: `logprobs.py`
projects them to the vocabulary chunk by chunk.
"""

import dataclasses
import os
from typing import Any

from flax import nnx
from flax.linen import partitioning as nn_partitioning
import jax
import jax.numpy as jnp
from maxtext.configs import pyconfig
from maxtext.layers import moe
from maxtext.utils import maxtext_utils
from maxtext.utils import model_creation_utils
from maxtext.utils.globals import MAXTEXT_CONFIGS_DIR

from search_agent.model import attention_patch
from search_agent.model import config as config_lib
from search_agent.model import mesh as mesh_lib

BASE_YML = os.path.join(MAXTEXT_CONFIGS_DIR, 'decoupled_base_test.yml')
ROUTING_KEY = 'selected_experts'


def _record_topk(get_topk):
  """Wraps RoutedMoE.get_topk to keep the chosen experts as an intermediate.

  MaxText 0.2.5 records routing only on its vLLM fused-MoE path; this does the
  same on every path when the config sets `return_routed_experts`.
  """

  def wrapped(self, *args, **kwargs):
    weights, indices = get_topk(self, *args, **kwargs)
    if self.config.return_routed_experts:
      setattr(self, ROUTING_KEY, nnx.Intermediate(indices))
    return weights, indices

  wrapped.search_agent_wrapped = True
  return wrapped


if not getattr(moe.RoutedMoE.get_topk, 'search_agent_wrapped', False):
  moe.RoutedMoE.get_topk = _record_topk(moe.RoutedMoE.get_topk)
attention_patch.install()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Model:
  """A built model: MaxText config, mesh, graph and state.

  Attributes:
    config: Our model config.
    mt_config: MaxText's HyperParameters.
    mesh: The device mesh.
    graphdef: nnx graph definition.
    params: Parameters as a nested dict of (sharded) arrays.
    logical_axes: Same tree as `params`, each leaf the tuple of the
      parameter's logical axis names.
    rest: nnx.State of everything else (RNG state).
  """

  config: config_lib.ModelConfig
  mt_config: Any
  mesh: jax.sharding.Mesh
  graphdef: Any
  params: dict
  logical_axes: dict
  rest: Any

  def rules(self):
    """Context manager: this model's mesh and logical axis rules."""
    return MeshAndRules(self.mesh, self.mt_config.logical_axis_rules)


class MeshAndRules:
  """Context manager: a mesh and logical axis rules (re-entrant per use)."""

  def __init__(self, mesh, rules):
    self._mesh, self._rules = mesh, rules
    self._ctx = []

  def __enter__(self):
    ctx = [jax.set_mesh(self._mesh), nn_partitioning.axis_rules(self._rules)]
    for c in ctx:
      c.__enter__()
    self._ctx.append(ctx)

  def __exit__(self, *exc):
    for c in reversed(self._ctx.pop()):
      c.__exit__(*exc)


def maxtext_config(
    cfg: config_lib.ModelConfig,
    layout: mesh_lib.Parallelism,
    num_devices: int | None = None,
    **extra: Any,
):
  """MaxText HyperParameters for `cfg` on `num_devices` (default: all)."""
  n = num_devices or jax.device_count()
  kw = config_lib.to_maxtext_kwargs(cfg, layout, n)
  # MaxText sizes global batches (and KV caches) by its device count; on a
  # subset of the devices (tests, samplers beside a trainer) give it ours.
  kw.update(internal_compile=True, internal_compile_num_devices=n)
  kw.update(extra)
  return pyconfig.initialize(['search_agent', BASE_YML], **kw)


def build(
    cfg: config_lib.ModelConfig,
    layout: mesh_lib.Parallelism,
    *,
    mt_config: Any = None,
    model_mode: str = 'train',
    record_routing: bool = False,
    devices: list[jax.Device] | None = None,
) -> Model:
  """Builds (randomly initialized) the model on a mesh of `devices`.

  Args:
    cfg: What to build.
    layout: Parallel layout of `devices`.
    mt_config: MaxText config to use instead of deriving one from `cfg`.
    model_mode: MaxText model mode ('train').
    record_routing: Keep each MoE layer's chosen experts (ForwardOut).
    devices: Devices of the mesh (default: all).

  Returns:
    The built Model.
  """
  if record_routing and not cfg.supports_replay:
    raise config_lib.ModelConfigError(
        f'decoder_block={cfg.decoder_block!r} cannot replay routing; use one'
        f' of {config_lib.REPLAY_BLOCKS}'
    )
  devices = devices or jax.devices()
  mt = mt_config or maxtext_config(
      cfg, layout, len(devices), return_routed_experts=record_routing
  )
  mesh = maxtext_utils.get_mesh_from_config(mt, devices)
  create_fn, abstract = model_creation_utils.create_nnx_abstract_model(
      mt, mesh, model_mode=model_mode
  )
  graphdef, abs_params, abs_rest = nnx.split(abstract, nnx.Param, ...)
  shardings = jax.tree.map(
      lambda x: x.sharding, nnx.state(abstract), is_leaf=_is_sds
  )
  with MeshAndRules(mesh, mt.logical_axis_rules):
    state = jax.jit(lambda: nnx.state(create_fn()), out_shardings=shardings)()
  model = nnx.merge(graphdef, state)
  _, params, rest = nnx.split(model, nnx.Param, ...)
  del abs_params, abs_rest
  logical = jax.tree.map(
      lambda v: tuple(v.get_metadata().get('out_sharding') or ()),
      params,
      is_leaf=lambda x: isinstance(x, nnx.Variable),
  )
  return Model(
      config=cfg,
      mt_config=mt,
      mesh=mesh,
      graphdef=graphdef,
      params=nnx.to_pure_dict(params),
      logical_axes=nnx.to_pure_dict(logical),
      rest=rest,
  )


def _is_sds(x) -> bool:
  return isinstance(x, jax.ShapeDtypeStruct)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ForwardOut:
  """Forward results: final hidden states and what the MoE layers recorded.

  Attributes:
    hidden_btd: Final (pre-norm) hidden states.
    routing_bsle: Chosen experts [batch, seq, layers, top_k], or None.
    lb_loss: MoE load-balance loss (0.0 when its weight is 0).
  """

  hidden_btd: jax.Array
  routing_bsle: jax.Array | None
  lb_loss: jax.Array


def forward(
    graphdef,
    params,
    rest,
    tokens_bt: jax.Array,
    positions_bt: jax.Array,
    segments_bt: jax.Array,
    forced_bsle: jax.Array | None = None,
    attention_block: int = 0,
) -> ForwardOut:
  """Runs the decoder; call under `Model.rules()` (inside or outside jit).

  `attention_block` > 0 computes the attention with
  `blocked_attention.blocked_causal_attention` (ModelConfig.attention_block).
  """
  model = nnx.merge(graphdef, params, rest, copy=True)
  kwargs = {}
  if forced_bsle is not None:
    kwargs['forced_routed_experts'] = forced_bsle
  with attention_patch.attention_block(attention_block):
    model(
        decoder_input_tokens=tokens_bt,
        decoder_positions=positions_bt,
        decoder_segment_ids=segments_bt,
        enable_dropout=False,
        **kwargs,
    )
  inter = nnx.pop(model, nnx.Intermediate)
  hidden = None
  routing = []
  lb = jnp.zeros((), jnp.float32)
  for path, var in inter.flat_state():
    value = var.get_value() if hasattr(var, 'get_value') else var
    name = str(path[-1])
    if name == 'hidden_states':
      hidden = value[0] if isinstance(value, tuple) else value
    elif name == ROUTING_KEY:
      routing.append((path, value))
    elif name == 'moe_lb_loss':
      leaves = value if isinstance(value, tuple) else (value,)
      lb = lb + sum(jnp.sum(x) for x in leaves)
  if hidden is None:
    raise RuntimeError(
        'MaxText returned no hidden_states: the model must be built in'
        ' train mode with num_vocab_tiling > 1 (see config.to_maxtext_kwargs)'
    )
  return ForwardOut(
      hidden_btd=hidden,
      routing_bsle=stack_routing(routing, tokens_bt.shape),
      lb_loss=lb,
  )


def stack_routing(items, shape_bt) -> jax.Array | None:
  """Routing intermediates -> [batch, seq, layers, top_k] int32."""
  if not items:
    return None
  items.sort(key=lambda kv: tuple(_natural(str(p)) for p in kv[0]))
  per_layer = []
  for _, value in items:
    leaves = value if isinstance(value, tuple) else (value,)
    for x in leaves:
      # Scanned layers stack on axis 0: [layers, b, s, k] (or [layers, b*s,
      # k]); unscanned give [b, s, k].
      x = x.reshape((-1,) + tuple(shape_bt) + (x.shape[-1],))
      per_layer.extend(list(x))
  return jnp.stack(per_layer, axis=2).astype(jnp.int32)


def _natural(part: str) -> tuple:
  """'layers_10' sorts after 'layers_9'."""
  digits = ''.join(ch for ch in part if ch.isdigit())
  return (part.rstrip('0123456789'), int(digits) if digits else -1)


def logits_from_hidden(graphdef, params, rest, hidden_btd) -> jax.Array:
  """Final norm + output projection of hidden states (any leading shape)."""
  model = nnx.merge(graphdef, params, rest, copy=True)
  return model.logits_from_hidden_states_for_vocab_tiling(
      hidden_btd, True, 'train'
  )
