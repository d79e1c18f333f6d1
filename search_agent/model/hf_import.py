"""HF safetensors -> MaxText/orbax parameters, offline, and loading them.

`convert` runs MaxText's own converter (`checkpoint_conversion.to_maxtext`,
lazy safetensors reads: no torch, no Hub access) on a local HF directory.
MaxText looks the HF architecture up by preset name; we register the
directory's own config.json under that name for the conversion, so a
checkpoint whose sizes differ from the preset (a tiny test model, a
fine-tuned variant) converts too. `model_config_for_hf` derives the matching
`ModelConfig` from config.json. `load_params` restores the converted
parameters onto a built model's mesh.

  python -m search_agent.model.tools.import_hf --hf_dir=DIR --out_dir=OUT \
      --preset=qwen3-30b-a3b
"""

import dataclasses
import json
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
from maxtext.checkpoint_conversion import to_maxtext
import orbax.checkpoint as ocp
import transformers

from search_agent import paths
from search_agent.model import config as config_lib
from search_agent.model import families
from search_agent.model import maxtext_model

# HF config.json key -> MaxText key, per HF model_type.
DIMS = {
    'mixtral': {
        'hidden_size': 'base_emb_dim',
        'intermediate_size': 'base_moe_mlp_dim',
        'num_hidden_layers': 'base_num_decoder_layers',
        'num_attention_heads': 'base_num_query_heads',
        'num_key_value_heads': 'base_num_kv_heads',
        'head_dim': 'head_dim',
        'num_local_experts': 'num_experts',
        'num_experts_per_tok': 'num_experts_per_tok',
        'rms_norm_eps': 'normalization_layer_epsilon',
        'rope_theta': 'rope_max_timescale',
    },
    'qwen3_moe': {
        'hidden_size': 'base_emb_dim',
        'moe_intermediate_size': 'base_moe_mlp_dim',
        'num_hidden_layers': 'base_num_decoder_layers',
        'num_attention_heads': 'base_num_query_heads',
        'num_key_value_heads': 'base_num_kv_heads',
        'head_dim': 'head_dim',
        'num_experts': 'num_experts',
        'num_experts_per_tok': 'num_experts_per_tok',
        'rms_norm_eps': 'normalization_layer_epsilon',
        'rope_theta': 'rope_max_timescale',
    },
    # Qwen3.5 (hybrid gated-delta-net / attention MoE): sizes live under
    # config.json's text_config (the Hub checkpoint is multimodal).
    'qwen3_5_moe': {
        'hidden_size': 'base_emb_dim',
        'moe_intermediate_size': 'base_moe_mlp_dim',
        'num_hidden_layers': 'base_num_decoder_layers',
        'num_attention_heads': 'base_num_query_heads',
        'num_key_value_heads': 'base_num_kv_heads',
        'head_dim': 'head_dim',
        'num_experts': 'num_experts',
        'num_experts_per_tok': 'num_experts_per_tok',
        'rms_norm_eps': 'normalization_layer_epsilon',
        'rope_theta': 'rope_max_timescale',
        'partial_rotary_factor': 'partial_rotary_factor',
        'full_attention_interval': 'inhomogeneous_layer_cycle_interval',
        'linear_conv_kernel_dim': 'gdn_conv_kernel_dim',
        'linear_key_head_dim': 'gdn_key_head_dim',
        'linear_value_head_dim': 'gdn_value_head_dim',
        'linear_num_key_heads': 'gdn_num_key_heads',
        'linear_num_value_heads': 'gdn_num_value_heads',
    },
}
# HF model types whose sizes are under config.json's `text_config`.
TEXT_CONFIG_TYPES = ('qwen3_5_moe',)
# Model types whose MLP width is the expert width (no dense layers).
_ALL_MOE = ('mixtral', 'qwen3_5_moe')


class HFImportError(ValueError):
  """An HF checkpoint cannot be imported (unknown type, missing files)."""


def read_hf_config(hf_dir: str) -> dict:
  path = os.path.join(hf_dir, 'config.json')
  if not os.path.isfile(path):
    raise HFImportError(f'{hf_dir} has no config.json: not an HF checkpoint')
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def model_config_for_hf(
    hf_dir: str, base: config_lib.ModelConfig
) -> config_lib.ModelConfig:
  """`base` with its sizes taken from the HF config.json in `hf_dir`."""
  hf = read_hf_config(hf_dir)
  kind = hf.get('model_type')
  if kind not in DIMS:
    raise HFImportError(
        f'model_type {kind!r} is not supported; supported: {sorted(DIMS)}'
    )
  src = dict(hf['text_config'] if kind in TEXT_CONFIG_TYPES else hf)
  for key in ('rope_theta', 'partial_rotary_factor'):
    if key not in src and key in (src.get('rope_parameters') or {}):
      src[key] = src['rope_parameters'][key]
  dims = dict(base.dims)
  dims.update({mt: src[k] for k, mt in DIMS[kind].items() if k in src})
  if kind in _ALL_MOE:
    dims['base_mlp_dim'] = dims['base_moe_mlp_dim']
  return dataclasses.replace(
      base, dims=tuple(sorted(dims.items())), vocab_size=src['vocab_size']
  )


def convert(
    hf_dir: str,
    out_dir: str,
    cfg: config_lib.ModelConfig,
    *,
    save_dtype: str = 'float32',
    shard_devices: int = 1,
) -> str:
  """Converts `hf_dir` for `cfg`; returns the parameter checkpoint path."""
  if not any(n.endswith('.safetensors') for n in os.listdir(hf_dir)):
    raise HFImportError(f'{hf_dir} holds no .safetensors files')
  hf_cfg = transformers.AutoConfig.from_pretrained(hf_dir)
  argv = ['to_maxtext', maxtext_model.BASE_YML] + [
      f'{k}={v}'
      for k, v in config_lib.to_maxtext_kwargs(
          cfg, families.layout_preset('fsdp'), jax.device_count()
      ).items()
      if k not in ('logical_axis_rules', 'base_output_directory', 'scan_layers')
  ]
  # MaxText 0.2.5 stacks the scanned Mixtral router on the wrong axis;
  # unscanned layers convert correctly and `load_params` stacks them.
  argv.append('scan_layers=False')
  argv.append(f'base_output_directory={paths.path(out_dir)}')
  saved = to_maxtext.HF_MODEL_CONFIGS.get(cfg.model_name)
  to_maxtext.HF_MODEL_CONFIGS[cfg.model_name] = hf_cfg
  try:
    to_maxtext.main(
        argv,
        lazy_load_tensors=True,
        hf_model_path=hf_dir,
        save_dtype=save_dtype,
        simulated_cpu_devices_count=shard_devices,
    )
  finally:
    to_maxtext.HF_MODEL_CONFIGS[cfg.model_name] = saved
  return paths.join(out_dir, '0', 'items')


def load_params(model: maxtext_model.Model, path: str) -> dict:
  """Converted (unscanned) parameters, stacked and placed like model.params.

  Layer `i` of the checkpoint (`decoder/layers_i/...`) goes to index `i` of
  the scanned parameter's `layers` axis (read from its logical axis names).
  Every checkpoint array is restored straight onto the devices, sharded as
  its slice of the target parameter is (the target's partition spec without
  the layers axis), so each process reads only the shards its devices hold
  and no host ever holds a whole tensor; the layers are then stacked on the
  devices into the target sharding.
  """
  mesh = model.mesh
  wanted = {}  # checkpoint path -> (target ShapeDtypeStruct, sharding)

  def plan(keypath, like, names):
    keys = [str(getattr(k, 'key', k)) for k in keypath]
    spec = like.sharding.spec
    if keys[:2] != ['decoder', 'layers']:
      wanted[tuple(keys)] = like.sharding
      return [tuple(keys)], None
    axis, layers = scanned_layers(keys, names, like.ndim, model.mt_config)
    spec = tuple(spec) + (None,) * (like.ndim - len(spec))
    per_layer = jax.sharding.NamedSharding(
        mesh, jax.sharding.PartitionSpec(*(spec[:axis] + spec[axis + 1 :]))
    )
    out = []
    for name, rest in layers(like.shape[axis]):
      wanted[('decoder', name, *rest)] = per_layer
      out.append(('decoder', name, *rest))
    return out, axis

  plans = jax.tree_util.tree_map_with_path(
      plan, model.params, model.logical_axes
  )
  dtypes = {}
  jax.tree_util.tree_map_with_path(
      lambda kp, like, p: dtypes.update({k: like.dtype for k in p[0]}),
      model.params,
      plans,
      is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2,
  )
  restored = _restore_sharded(path, wanted, dtypes)

  def assemble(like, p):
    keys, axis = p
    if axis is None:
      return restored[keys[0]]
    stack = jax.jit(
        lambda *xs: jnp.stack(xs, axis=axis), out_shardings=like.sharding
    )
    return stack(*(restored[k] for k in keys))

  return jax.tree.map(
      assemble,
      model.params,
      plans,
      is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2,
  )


def _restore_sharded(path: str, wanted: dict, dtypes: dict) -> dict:
  """{checkpoint path: array} restored with the given shardings and dtypes.

  Raises:
    HFImportError: The checkpoint lacks a wanted array.
  """
  ckpt = ocp.PyTreeCheckpointer()
  meta = ckpt.metadata(path)
  tree = getattr(getattr(meta, 'item_metadata', meta), 'tree', None)
  tree = tree if tree is not None else getattr(meta, 'item_metadata', meta)
  params = tree['params']['params']
  item, args = {}, {}
  for keys, sharding in wanted.items():
    leaf = _get(params, list(keys))
    node_i, node_a = item, args
    for k in keys[:-1]:
      node_i, node_a = node_i.setdefault(k, {}), node_a.setdefault(k, {})
    node_i[keys[-1]] = jax.ShapeDtypeStruct(
        leaf.shape, dtypes[keys], sharding=sharding
    )
    node_a[keys[-1]] = ocp.ArrayRestoreArgs(
        sharding=sharding, global_shape=leaf.shape, dtype=dtypes[keys]
    )
  out = ckpt.restore(
      path,
      args=ocp.args.PyTreeRestore(
          item={'params': {'params': item}},
          restore_args={'params': {'params': args}},
          partial_restore=True,
      ),
  )['params']['params']
  return {keys: _get(out, list(keys)) for keys in wanted}


def scanned_layers(keys, names, ndim, mt_config):
  """(layers axis, n -> [(unscanned layer name, rest of the path)]).

  A scanned parameter `decoder/layers/X` stacks layer i at index i of its
  `layers` axis; a hybrid block's `decoder/layers/layer_j/X` (Qwen3.5:
  cycles of `inhomogeneous_layer_cycle_interval` layers) stacks layer
  c * interval + j at index c. Parameters whose logical names do not name
  every axis (Qwen3.5's gated-delta-net and norms) scan on MaxText's
  `param_scan_axis`.
  """
  names = list(names)
  if 'layers' in names and len(names) == ndim:
    axis = names.index('layers')
  else:
    axis = mt_config.param_scan_axis
  block = re.fullmatch(r'layer_(\d+)', keys[2]) if len(keys) > 3 else None
  if block is None:
    rest = keys[2:]
    return axis, lambda n: [(f'layers_{i}', rest) for i in range(n)]
  j, rest = int(block.group(1)), keys[3:]
  every = mt_config.inhomogeneous_layer_cycle_interval
  return axis, lambda n: [(f'layers_{c * every + j}', rest) for c in range(n)]


def _get(tree, keys):
  for k in keys:
    if k not in tree:
      raise HFImportError(f'converted checkpoint lacks {"/".join(keys)}')
    tree = tree[k]
  return tree


def convert_in_subprocess(
    hf_dir: str, out_dir: str, cfg: config_lib.ModelConfig, timeout: int = 900
) -> str:
  """`convert` in a fresh CPU process with 2 host devices.

  MaxText's converter shards what it saves over all local devices, which must
  divide every parameter; a separate 2-device CPU process keeps that true
  whatever devices the caller holds.
  """
  env = dict(os.environ)
  env.update(
      JAX_PLATFORMS='cpu',
      XLA_FLAGS='--xla_force_host_platform_device_count=2',
      DECOUPLE_GCLOUD='TRUE',
  )
  cmd = [
      sys.executable,
      '-m',
      'search_agent.model.tools.import_hf',
      f'--hf_dir={hf_dir}',
      f'--out_dir={out_dir}',
      f'--model_json={json.dumps(families.as_dict(cfg))}',
  ]
  proc = subprocess.run(
      cmd, env=env, capture_output=True, text=True, timeout=timeout
  )
  if proc.returncode:
    raise HFImportError(f'conversion failed: {proc.stderr[-2000:]}')
  return proc.stdout.strip().splitlines()[-1]
