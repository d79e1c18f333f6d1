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
import subprocess
import sys

import jax
from maxtext.checkpoint_conversion import to_maxtext
import numpy as np
import orbax.checkpoint as ocp
import transformers

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
}


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
  if 'rope_theta' not in hf and 'rope_parameters' in hf:
    hf['rope_theta'] = hf['rope_parameters']['rope_theta']
  dims = dict(base.dims)
  dims.update({mt: hf[k] for k, mt in DIMS[kind].items() if k in hf})
  if kind == 'mixtral':
    dims['base_mlp_dim'] = dims['base_moe_mlp_dim']
  return dataclasses.replace(
      base, dims=tuple(sorted(dims.items())), vocab_size=hf['vocab_size']
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
  argv.append(f'base_output_directory={os.path.abspath(out_dir)}')
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
  return os.path.join(os.path.abspath(out_dir), '0', 'items')


def load_params(model: maxtext_model.Model, path: str) -> dict:
  """Converted (unscanned) parameters, stacked and placed like model.params.

  Layer `i` of the checkpoint (`decoder/layers_i/...`) goes to index `i` of
  the scanned parameter's `layers` axis (read from its logical axis names).
  """
  ckpt = ocp.StandardCheckpointer()
  meta = ckpt.metadata(path)
  meta = getattr(meta, 'item_metadata', meta)
  host = jax.sharding.SingleDeviceSharding(jax.local_devices(backend='cpu')[0])
  target = jax.tree.map(
      lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=host),
      getattr(meta, 'tree', meta),
  )
  flat = ckpt.restore(path, target)['params']['params']

  def pick(keypath, like, names):
    keys = [str(getattr(k, 'key', k)) for k in keypath]
    if keys[:2] != ['decoder', 'layers']:
      return _get(flat, keys)
    axis = list(names).index('layers')
    n = like.shape[axis]
    per_layer = [
        _get(flat, ['decoder', f'layers_{i}'] + keys[2:]) for i in range(n)
    ]
    return np.stack([np.asarray(x) for x in per_layer], axis=axis)

  values = jax.tree_util.tree_map_with_path(
      lambda kp, like, names: pick(kp, like, names),
      model.params,
      model.logical_axes,
  )
  shardings = jax.tree.map(lambda x: x.sharding, model.params)
  return jax.tree.map(
      lambda v, like, s: jax.device_put(np.asarray(v, like.dtype), s),
      values,
      model.params,
      shardings,
  )


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
