"""Model presets (the recipe's MoE families and a tiny CPU MoE) and layouts.

Configs under tpu_configs/ start from these and override fields; they reach
the library as ConfigDicts and become records here (`model_from_dict`,
`layout_from_dict`).

* 'tiny': a Mixtral-block MoE (2 layers, emb 64, 4 experts top-2, GQA 4/2
  heads of 16) sized for a 2-core CPU. The Mixtral block is the simplest
  MaxText block that supports forced routing (router replay).
* 'qwen3-30b-a3b': Qwen3-30B-A3B (48 layers, 128 experts top-8), the open
  recipe's model class. Its qwen3_moe block has no router replay in MaxText
  0.2.5.
* 'qwen3.5-35b-a3b': Qwen3.5-35B-A3B (hybrid gated-delta-net / attention,
  256 experts top-8 + 1 shared), which supports router replay.
"""

import dataclasses
from typing import Any, Mapping

from search_agent.model import config as config_lib
from search_agent.model import mesh as mesh_lib

_TINY_DIMS = (
    ('base_emb_dim', 64),
    ('base_mlp_dim', 128),
    ('base_moe_mlp_dim', 128),
    ('base_num_query_heads', 4),
    ('base_num_kv_heads', 2),
    ('head_dim', 16),
    ('base_num_decoder_layers', 2),
    ('num_experts', 4),
    ('num_experts_per_tok', 2),
)

MODELS: dict[str, config_lib.ModelConfig] = {
    'tiny': config_lib.ModelConfig(
        model_name='mixtral-8x7b',
        decoder_block='mixtral',
        dims=_TINY_DIMS,
        vocab_size=4096,
        # Long enough for the WebDancer system prompt (~1.5k tiny tokens) and
        # the first assistant turns.
        max_target_length=2048,
        dtype='float32',
        weight_dtype='float32',
        logits_chunk=256,
    ),
    'qwen3-30b-a3b': config_lib.ModelConfig(
        model_name='qwen3-30b-a3b',
        decoder_block='qwen3_moe',
        vocab_size=151936,
        max_target_length=262144,
        attention='flash',
        dense_moe=False,
        logits_chunk=4096,
    ),
    'qwen3.5-35b-a3b': config_lib.ModelConfig(
        model_name='qwen3.5-35b-a3b',
        decoder_block='qwen3_5',
        vocab_size=248320,
        max_target_length=262144,
        attention='flash',
        dense_moe=False,
        logits_chunk=4096,
    ),
}

LAYOUTS: dict[str, mesh_lib.Parallelism] = {
    # All devices on fsdp (1 CPU device in the tiny runs).
    'fsdp': mesh_lib.Parallelism(),
    # 8 simulated CPU devices: expert x tensor x context = 2 x 2 x 2.
    'cpu8_ep_tp_cp': mesh_lib.Parallelism(
        fsdp=1, expert=2, tensor=2, context=2
    ),
    # open-recipe.md SFT: TP=2, CP=8, EP=8 (128 chips, e.g. a v5p-256 slice);
    # MaxText's expert axis also shards the batch outside the MoE layers, as
    # expert-data parallelism does in Megatron.
    'recipe_tp2_cp8_ep8': mesh_lib.Parallelism(
        data=1, fsdp=1, expert=8, tensor=2, context=8
    ),
}


class UnknownPresetError(KeyError):
  """A model or layout preset name is not defined."""


def model_preset(name: str) -> config_lib.ModelConfig:
  if name not in MODELS:
    raise UnknownPresetError(
        f'model preset {name!r} is unknown; choose one of {sorted(MODELS)}'
    )
  return MODELS[name]


class DimsError(ValueError):
  """A dims override is malformed or names no size of the preset."""


def with_dims(
    cfg: config_lib.ModelConfig, overrides: Any
) -> config_lib.ModelConfig:
  """`cfg` with some of its sizes (`dims`) replaced.

  Args:
    cfg: A model config whose `dims` hold the sizes (the tiny preset's).
    overrides: 'name=value' strings (a sampler's `dims` flag) or a mapping;
      each name must be one of `cfg.dims`, each value an integer.

  Returns:
    The config with those sizes (unchanged when `overrides` is empty).
  """
  items = (
      overrides.items()
      if isinstance(overrides, Mapping)
      else [str(entry).partition('=')[::2] for entry in overrides]
  )
  known = dict(cfg.dims)
  dims = dict(known)
  for name, value in items:
    name = str(name).strip()
    if name not in known:
      raise DimsError(
          f'dims override {name!r}: {cfg.model_name} sizes are'
          f' {sorted(known) or "fixed by MaxText (none to override)"}'
      )
    try:
      dims[name] = int(str(value).strip())
    except ValueError:
      raise DimsError(
          f'dims override {name}={value!r}: the value must be an integer'
      ) from None
  if dims == known:
    return cfg
  return dataclasses.replace(cfg, dims=tuple(sorted(dims.items())))


def layout_preset(name: str) -> mesh_lib.Parallelism:
  if name not in LAYOUTS:
    raise UnknownPresetError(
        f'layout preset {name!r} is unknown; choose one of {sorted(LAYOUTS)}'
    )
  return LAYOUTS[name]


def as_dict(record: Any) -> dict[str, Any]:
  """A record as plain fields (dims as a dict) for a ConfigDict."""
  out = dataclasses.asdict(record)
  if 'dims' in out:
    out['dims'] = dict(out['dims'])
  return out


def model_from_dict(d: Mapping[str, Any]) -> config_lib.ModelConfig:
  """ModelConfig from a (ConfigDict) mapping of its fields."""
  fields = dict(d)
  fields['dims'] = tuple(sorted(dict(fields.get('dims', {})).items()))
  return config_lib.ModelConfig(**fields)


def layout_from_dict(d: Mapping[str, Any]) -> mesh_lib.Parallelism:
  return mesh_lib.Parallelism(**dict(d))
