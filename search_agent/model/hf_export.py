"""MaxText parameters -> HF safetensors (mixtral, qwen3_moe), offline.

The inverse of `hf_import`: a built model's (scanned) parameters are split
into MaxText's unscanned per-layer keys (`params-decoder-layers_{i}-...`) and
run through MaxText's own MaxText -> HF tables (`PARAM_MAPPING`, `HOOK_FNS`
with `saving_to_hf=True`, `HF_SHAPE`) parameter by parameter, the same
tables `hf_import` uses the other way; `save` writes `model.safetensors`
(sharded with an index past `max_shard_bytes`, as the Hub does), a Hub-style
`config.json` and the base checkpoint's tokenizer files, so vLLM or SGLang
can serve the directory. No tokenizer download, no Hub access, no torch.

  python -m search_agent.model.tools.export_hf --checkpoint=WORKDIR \
      --preset=qwen3-30b-a3b --hf_base_dir=BASE_HF_DIR --out_dir=OUT
"""

import json
import os
import shutil
import types
from typing import Any, Mapping

from flax import nnx
import jax
import jax.numpy as jnp
from maxtext.checkpoint_conversion.utils import hf_shape
from maxtext.checkpoint_conversion.utils import param_mapping
from maxtext.checkpoint_conversion.utils import utils as conversion_utils
from maxtext.utils import maxtext_utils
from maxtext.utils import model_creation_utils
import numpy as np
from safetensors import numpy as safetensors_np

from search_agent.model import checkpoint_params
from search_agent.model import config as config_lib
from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import maxtext_model

# decoder_block -> (HF model_type, HF architecture).
HF_TYPES = {
    'mixtral': ('mixtral', 'MixtralForCausalLM'),
    'qwen3_moe': ('qwen3_moe', 'Qwen3MoeForCausalLM'),
}
# Files of an HF checkpoint copied from its base directory (tokenizer, chat
# template, generation defaults), when present.
TOKENIZER_FILES = (
    'tokenizer.json',
    'tokenizer_config.json',
    'special_tokens_map.json',
    'vocab.json',
    'merges.txt',
    'generation_config.json',
    'chat_template.jinja',
)
SINGLE_FILE = 'model.safetensors'
INDEX_FILE = 'model.safetensors.index.json'


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
  for k in ('rope_theta', 'rms_norm_eps'):
    sizes[k] = float(sizes[k])
  out = dict(base or {})
  if out and out.get('model_type') != kind:
    raise HFExportError(
        f'base config.json has model_type {out.get("model_type")!r}, the'
        f' model is {kind!r}'
    )
  if 'rope_theta' not in out and 'rope_parameters' in out:
    out['rope_theta'] = out['rope_parameters'].get('rope_theta')
  differ = [
      f'{k}: base {out[k]}, model {v}'
      for k, v in sizes.items()
      if k in out and not np.isclose(float(out[k]), float(v))
  ]
  if differ:
    raise HFExportError(
        "the base config.json is not this model's (configure the model the"
        ' checkpoint was trained as): ' + '; '.join(differ)
    )
  out.update(sizes)
  if 'rope_parameters' in out:
    out['rope_parameters'] = dict(
        out['rope_parameters'], rope_theta=sizes['rope_theta']
    )
  out.update(
      model_type=kind,
      architectures=[arch],
      tie_word_embeddings=bool(getattr(mt_config, 'logits_via_embedding')),
      hidden_act='silu',
  )
  out.setdefault('max_position_embeddings', cfg.max_target_length)
  if kind == 'qwen3_moe':
    # MaxText softmaxes the top-k router logits: renormalized top-k weights.
    out.update(norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[])
    out.setdefault('attention_bias', False)
    out.setdefault('intermediate_size', getattr(mt_config, 'mlp_dim'))
  return out


def maxtext_state(params: Mapping, logical_axes: Mapping) -> dict[str, Any]:
  """MaxText's unscanned checkpoint keys -> arrays of a built model's params.

  A scanned parameter `decoder/layers/X` (its `layers` axis named in
  `logical_axes`) becomes `params-decoder-layers_{i}-X` for every layer i.
  """
  out = {}
  flat = jax.tree_util.tree_flatten_with_path(params)[0]
  names = jax.tree.leaves(logical_axes, is_leaf=lambda x: isinstance(x, tuple))
  for (path, value), axes in zip(flat, names, strict=True):
    keys = [str(getattr(k, 'key', k)) for k in path]
    if keys[:2] != ['decoder', 'layers']:
      out['-'.join(['params', *keys])] = value
      continue
    axis = list(axes).index('layers')
    for i in range(value.shape[axis]):
      key = '-'.join(['params', 'decoder', f'layers_{i}', *keys[2:]])
      out[key] = jnp.take(value, i, axis=axis)
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


def save(
    out_dir: str,
    tensors: Mapping[str, np.ndarray],
    hf_config: Mapping,
    *,
    tokenizer_dir: str = '',
    max_shard_bytes: int = 5 * 2**30,
) -> list[str]:
  """Writes an HF checkpoint directory; returns the files written.

  Tensors go to `model.safetensors`, or to `model-0000k-of-0000n.safetensors`
  plus `model.safetensors.index.json` when they exceed `max_shard_bytes`;
  config.json is written last.
  """
  os.makedirs(out_dir, exist_ok=True)
  shards, size = [[]], 0
  for name in sorted(tensors):
    nbytes = tensors[name].nbytes
    if shards[-1] and size + nbytes > max_shard_bytes:
      shards.append([])
      size = 0
    shards[-1].append(name)
    size += nbytes
  files = []
  weight_map = {}
  for k, names in enumerate(shards, 1):
    fname = SINGLE_FILE
    if len(shards) > 1:
      fname = f'model-{k:05d}-of-{len(shards):05d}.safetensors'
    safetensors_np.save_file(
        {n: tensors[n] for n in names},
        os.path.join(out_dir, fname),
        metadata={'format': 'pt'},
    )
    weight_map.update({n: fname for n in names})
    files.append(fname)
  if len(shards) > 1:
    total = sum(t.nbytes for t in tensors.values())
    index = {'metadata': {'total_size': total}, 'weight_map': weight_map}
    _write_json(os.path.join(out_dir, INDEX_FILE), index)
    files.append(INDEX_FILE)
  for fname in TOKENIZER_FILES:
    src = os.path.join(tokenizer_dir, fname) if tokenizer_dir else ''
    if src and os.path.isfile(src):
      shutil.copyfile(src, os.path.join(out_dir, fname))
      files.append(fname)
  _write_json(os.path.join(out_dir, 'config.json'), dict(hf_config))
  files.append('config.json')
  return files


def _write_json(path: str, obj: Any) -> None:
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(obj, f, indent=2, sort_keys=True)
    f.write('\n')


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
  state = maxtext_state(params, logical_axes)
  tensors = to_hf_tensors(state, mt_config, hf_cfg, dtype)
  return save(out_dir, tensors, hf_cfg, tokenizer_dir=hf_base_dir)


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
