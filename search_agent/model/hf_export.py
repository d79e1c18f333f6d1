"""MaxText parameters -> HF safetensors (mixtral, qwen3_moe), offline.

The inverse of `hf_import`: a built model's (scanned) parameters are split
into MaxText's unscanned per-layer keys (`params-decoder-layers_{i}-...`) and
run through MaxText's own MaxText -> HF tables (`PARAM_MAPPING`, `HOOK_FNS`
with `saving_to_hf=True`, `HF_SHAPE`) parameter by parameter, the same
tables `hf_import` uses the other way; `hf_files.save` writes the
safetensors (sharded with an index past 5 GiB), a Hub-style `config.json`
and the base checkpoint's tokenizer files, so vLLM or SGLang can serve the
directory. No tokenizer download, no Hub access, no torch.

  python -m search_agent.model.tools.export_hf --checkpoint=WORKDIR \
      --preset=qwen3-30b-a3b --hf_base_dir=BASE_HF_DIR --out_dir=OUT
"""

import json
import types
from typing import Any, Mapping

from flax import nnx
import jax
import jax.numpy as jnp
from maxtext.checkpoint_conversion.utils import hf_model_configs
from maxtext.checkpoint_conversion.utils import hf_shape
from maxtext.checkpoint_conversion.utils import param_mapping
from maxtext.checkpoint_conversion.utils import utils as conversion_utils
from maxtext.utils import maxtext_utils
from maxtext.utils import model_creation_utils
import numpy as np

from search_agent.model import checkpoint_params
from search_agent.model import config as config_lib
from search_agent.model import families
from search_agent.model import hf_files
from search_agent.model import hf_import
from search_agent.model import maxtext_model

# decoder_block -> (HF model_type, HF architecture).
HF_TYPES = {
    'mixtral': ('mixtral', 'MixtralForCausalLM'),
    'qwen3_moe': ('qwen3_moe', 'Qwen3MoeForCausalLM'),
    # The Hub's Qwen3.5 checkpoints are multimodal; the vision tower's
    # tensors are carried over from the base checkpoint (see `export`).
    'qwen3_5': ('qwen3_5_moe', 'Qwen3_5MoeForConditionalGeneration'),
}
# Tensor-name prefixes of parts the MaxText model does not hold (Qwen3.5's
# vision tower), copied from the base checkpoint as they are.
CARRIED_PREFIXES = ('model.visual.',)


class HFExportError(ValueError):
  """Parameters cannot be exported (unsupported block, keys, sizes)."""


class _Unscanned:
  """A MaxText config read as unscanned, saving in `weight_dtype`."""

  def __init__(self, base: Any, weight_dtype: str):
    self._base, self.scan_layers, self.weight_dtype = base, False, weight_dtype

  def __getattr__(self, name: str) -> Any:
    return getattr(self._base, name)


def hf_config_for(
    cfg: config_lib.ModelConfig, mt_config: Any, base: Mapping | None = None
) -> dict[str, Any]:
  """A Hub-style config.json for `cfg` (sizes read from MaxText's config).

  Args:
    cfg: Our model config (its decoder_block picks the HF type).
    mt_config: MaxText HyperParameters of the built model.
    base: The base checkpoint's config.json (keeps its other keys: token ids,
      rope scaling, max positions); its sizes must match.

  Raises:
    HFExportError: Unsupported block, or `base` has other sizes.
  """
  if cfg.decoder_block not in HF_TYPES:
    raise HFExportError(
        f'decoder_block {cfg.decoder_block!r} has no HF export; supported:'
        f' {sorted(HF_TYPES)}'
    )
  kind, arch = HF_TYPES[cfg.decoder_block]
  sizes = {
      hf: getattr(mt_config, mt) for hf, mt in hf_import.DIMS[kind].items()
  }
  sizes['vocab_size'] = cfg.vocab_size
  for k in ('rope_theta', 'rms_norm_eps', 'partial_rotary_factor'):
    if k in sizes:
      sizes[k] = float(sizes[k])
  nested = kind in hf_import.TEXT_CONFIG_TYPES
  given = base is not None
  if base is None and nested:
    # The Hub config MaxText holds for the preset (vision tower included).
    base = hf_model_configs.HF_MODEL_CONFIGS[mt_config.model_name].to_dict()
  out = json.loads(json.dumps(base or {}))  # a deep copy
  if out and out.get('model_type') != kind:
    raise HFExportError(
        f'base config.json has model_type {out.get("model_type")!r}, the'
        f' model is {kind!r}'
    )
  text = out.setdefault('text_config', {}) if nested else out
  rope = text.get('rope_parameters') or {}
  for k in ('rope_theta', 'partial_rotary_factor'):
    if k not in text and k in rope:
      text[k] = rope[k]
  differ = [
      f'{k}: base {text[k]}, model {v}'
      for k, v in sizes.items()
      if given and k in text and not np.isclose(float(text[k]), float(v))
  ]
  if differ:
    raise HFExportError(
        "the base config.json is not this model's (configure the model the"
        ' checkpoint was trained as): ' + '; '.join(differ)
    )
  text.update(sizes)
  if rope:
    text['rope_parameters'] = dict(rope, rope_theta=sizes['rope_theta'])
  text.update(
      tie_word_embeddings=bool(getattr(mt_config, 'logits_via_embedding')),
      hidden_act='silu',
  )
  text.setdefault('max_position_embeddings', cfg.max_target_length)
  if kind == 'qwen3_moe':
    # MaxText softmaxes the top-k router logits: renormalized top-k weights.
    out.update(norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[])
    out.setdefault('attention_bias', False)
    out.setdefault('intermediate_size', getattr(mt_config, 'mlp_dim'))
  if nested:
    every = sizes['full_attention_interval']
    text['layer_types'] = [
        'full_attention' if (i + 1) % every == 0 else 'linear_attention'
        for i in range(sizes['num_hidden_layers'])
    ]
    text['shared_expert_intermediate_size'] = sizes['moe_intermediate_size']
    out['tie_word_embeddings'] = text['tie_word_embeddings']
  out.update(model_type=kind, architectures=[arch])
  return out


def maxtext_state(
    params: Mapping, logical_axes: Mapping, mt_config: Any
) -> dict[str, Any]:
  """MaxText's unscanned checkpoint keys -> arrays of a built model's params.

  A scanned parameter `decoder/layers/X` becomes `params-decoder-layers_{i}-X`
  for every layer i (hybrid blocks: see `hf_import.scanned_layers`).
  """
  out = {}
  flat = jax.tree_util.tree_flatten_with_path(params)[0]
  names = jax.tree.leaves(logical_axes, is_leaf=lambda x: isinstance(x, tuple))
  for (path, value), axes in zip(flat, names, strict=True):
    keys = [str(getattr(k, 'key', k)) for k in path]
    if keys[:2] != ['decoder', 'layers']:
      out['-'.join(['params', *keys])] = value
      continue
    axis, layers = hf_import.scanned_layers(
        keys, axes, len(value.shape), mt_config
    )
    for c, (name, rest) in enumerate(layers(value.shape[axis])):
      key = '-'.join(['params', 'decoder', name, *rest])
      out[key] = jnp.take(value, c, axis=axis)
  return out


def to_hf_tensors(
    state: Mapping[str, Any],
    mt_config: Any,
    hf_config: Mapping,
    dtype: str = 'bfloat16',
) -> dict[str, np.ndarray]:
  """HF tensor name -> array, from `maxtext_state`'s keys.

  Raises:
    HFExportError: The model's MaxText name has no MaxText -> HF table, or a
      parameter has no HF name.
  """
  name = mt_config.model_name
  if name not in param_mapping.PARAM_MAPPING:
    raise HFExportError(f'MaxText has no HF mapping for {name!r}')
  mt = _Unscanned(mt_config, dtype)
  hf = dict(hf_config)
  mapping = param_mapping.PARAM_MAPPING[name](hf, mt, False)
  hooks = param_mapping.HOOK_FNS[name](hf, mt, False, saving_to_hf=True)
  shapes = hf_shape.HF_SHAPE[name](hf)
  for key in [k for k in hooks if isinstance(k, tuple)]:
    # Several MaxText tensors fused into one HF tensor.
    if key[0] in mapping:
      mapping[key] = mapping[key[0]]
      for part in key:
        mapping.pop(part, None)
  unmapped = sorted(set(state) - set(mapping) - _parts(mapping))
  if unmapped:
    raise HFExportError(
        f"{len(unmapped)} parameters have no HF name in MaxText's {name}"
        f' table: {unmapped[:5]}'
    )
  out = {}
  for key in mapping:
    parts = key if isinstance(key, tuple) else (key,)
    if not all(p in state for p in parts):
      continue  # e.g. attention biases the model does not have
    weight = [state[p] for p in parts] if isinstance(key, tuple) else state[key]
    for hf_name, array in conversion_utils.process_maxtext_param(
        key, weight, mapping, hooks, shapes, mt
    ):
      out[hf_name] = np.ascontiguousarray(array)
  return out


def _parts(mapping: Mapping) -> set[str]:
  return {p for k in mapping if isinstance(k, tuple) for p in k}


def export(
    params: Mapping,
    logical_axes: Mapping,
    cfg: config_lib.ModelConfig,
    mt_config: Any,
    out_dir: str,
    *,
    hf_base_dir: str = '',
    dtype: str = 'bfloat16',
) -> list[str]:
  """Writes `params` as an HF checkpoint in `out_dir`; returns its files."""
  base = hf_import.read_hf_config(hf_base_dir) if hf_base_dir else None
  hf_cfg = hf_config_for(cfg, mt_config, base)
  hf_cfg['torch_dtype'] = dtype
  state = maxtext_state(params, logical_axes, mt_config)
  tensors = to_hf_tensors(state, mt_config, hf_cfg, dtype)
  if hf_base_dir:
    tensors.update(hf_files.base_tensors(hf_base_dir, CARRIED_PREFIXES))
  return hf_files.save(out_dir, tensors, hf_cfg, tokenizer_dir=hf_base_dir)


def abstract_target(
    cfg: config_lib.ModelConfig, devices: list[jax.Device]
) -> tuple[Any, dict, dict]:
  """(MaxText config, abstract params with shardings, logical axes).

  Nothing is initialized: the parameters are jax.ShapeDtypeStructs on a mesh
  of `devices`, the restore target of a checkpoint.
  """
  layout = families.layout_preset('fsdp')
  mt = maxtext_model.maxtext_config(cfg, layout, len(devices))
  mesh = maxtext_utils.get_mesh_from_config(mt, devices)
  _, abstract = model_creation_utils.create_nnx_abstract_model(
      mt, mesh, model_mode='train'
  )
  _, params, _ = nnx.split(abstract, nnx.Param, ...)
  logical = jax.tree.map(
      lambda v: tuple(v.get_metadata().get('out_sharding') or ()),
      params,
      is_leaf=lambda x: isinstance(x, nnx.Variable),
  )
  return mt, nnx.to_pure_dict(params), nnx.to_pure_dict(logical)


def export_checkpoint(
    cfg: config_lib.ModelConfig,
    out_dir: str,
    *,
    checkpoint: str = '',
    step: int = checkpoint_params.LATEST,
    params_path: str = '',
    hf_base_dir: str = '',
    dtype: str = 'bfloat16',
    devices: list[jax.Device] | None = None,
) -> list[str]:
  """Exports a training checkpoint or converted parameters to `out_dir`.

  Args:
    cfg: The model the checkpoint holds (the training config's model).
    out_dir: Output HF checkpoint directory.
    checkpoint: A training workdir (or its checkpoints/): its `step`.
    step: Update step (LATEST: the newest finished checkpoint).
    params_path: Instead, parameters written by `import_hf`.
    hf_base_dir: The base HF checkpoint (config.json, tokenizer files).
    dtype: Saved dtype ('bfloat16', 'float32').
    devices: Devices to restore onto (default: the local CPU devices).

  Raises:
    HFExportError: Not exactly one of checkpoint and params_path.
  """
  if bool(checkpoint) == bool(params_path):
    raise HFExportError(
        'set exactly one of checkpoint (a training workdir) and params_path'
        f' (import_hf output); got {checkpoint!r} and {params_path!r}'
    )
  devices = devices or jax.local_devices(backend='cpu')
  mt, like, logical = abstract_target(cfg, devices)
  if checkpoint:
    params, _ = checkpoint_params.restore_params(checkpoint, like, step)
  else:
    target = types.SimpleNamespace(params=like, logical_axes=logical)
    params = hf_import.load_params(target, params_path)
  return export(
      params,
      logical,
      cfg,
      mt,
      out_dir,
      hf_base_dir=hf_base_dir,
      dtype=dtype,
  )
