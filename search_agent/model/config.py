"""Model configuration: a MaxText preset plus our overrides, as a record.

`ModelConfig` names a MaxText model preset (configs/models/<name>.yml) and the
keys we override; `to_maxtext_kwargs` turns it, with a parallel layout, into
the keyword overrides for `maxtext.configs.pyconfig.initialize`. Nothing here
imports MaxText, so configs and tests can build records without it.
"""

import dataclasses
from typing import Any

from search_agent.model import mesh as mesh_lib

# Decoder blocks whose MoE accepts `forced_routed_experts` (router replay);
# MaxText 0.2.5 configs/types.py FORCED_ROUTING_SUPPORTED_DECODER_BLOCKS.
REPLAY_BLOCKS = ('mixtral', 'qwen3_5', 'gemma4')
# '/'-joined parameter paths of MoE routers (Mixtral: MoeBlock_0/gate, Qwen:
# moe_block/gate); the optimizer zeroes their updates when freeze_router.
ROUTER_PARAM_PATTERN = r'(MoeBlock_0|moe_block)/gate/'


class ModelConfigError(ValueError):
  """A model configuration is inconsistent."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelConfig:
  """What model to build and how.

  Attributes:
    model_name: MaxText preset, e.g. 'mixtral-8x7b', 'qwen3-30b-a3b',
      'qwen3.5-35b-a3b'.
    decoder_block: The preset's decoder block (checked for router replay).
    dims: MaxText keys overriding the preset's sizes (the tiny model), as
      (key, value) pairs; empty keeps the preset.
    vocab_size: Vocabulary size (the tokenizer's, padded as the preset wants).
    max_target_length: Longest (packed) sequence the model is built for.
    dtype: Activation dtype.
    weight_dtype: Parameter dtype.
    attention: MaxText attention kernel ('dot_product' on CPU, 'flash' on
      TPU).
    attention_block: > 0 replaces the dot-product attention of training
      forwards (`maxtext_model.forward`) with `blocked_attention` in blocks
      of this many positions, skipping block pairs with no shared segment
      (the CPU lever for packed rows); 0 keeps MaxText's.
    dense_moe: True runs the MoE as dense matmuls over all experts (the CPU
      path: XLA:CPU has no ragged all-to-all); False uses sparse matmul with
      the megablox kernel (TPU).
    capacity_factor: MoE capacity factor; -1 is dropless.
    remat_policy: MaxText remat policy ('full' recomputes every activation).
    scan_layers: Scan the decoder layers (faster compile on deep models).
    freeze_router: Keep router (gate) weights fixed during training (the
      trainer adds ROUTER_PARAM_PATTERN to the optimizer's frozen set).
    load_balance_loss_weight: Weight of MaxText's MoE load-balance loss.
    logits_chunk: Tokens per chunk when computing per-token log-probs, so
      memory holds chunk x vocab logits, never length x vocab.
    logits_remat: Recompute each chunk's logits in the backward pass; False
      keeps every chunk's logits (length x vocab floats: small models only).
    load_parameters_path: Parameter checkpoint to start from ('' = random
      init): the output of `search_agent.model.tools.import_hf`, loaded by
      the trainer with `hf_import.load_params`.
  """

  model_name: str
  decoder_block: str
  dims: tuple[tuple[str, Any], ...] = ()
  vocab_size: int
  max_target_length: int
  dtype: str = 'bfloat16'
  weight_dtype: str = 'float32'
  attention: str = 'dot_product'
  attention_block: int = 0
  dense_moe: bool = True
  capacity_factor: float = -1.0
  remat_policy: str = 'full'
  scan_layers: bool = True
  freeze_router: bool = False
  load_balance_loss_weight: float = 0.0
  logits_chunk: int = 1024
  logits_remat: bool = True
  load_parameters_path: str = ''

  @property
  def supports_replay(self) -> bool:
    return self.decoder_block in REPLAY_BLOCKS


def to_maxtext_kwargs(
    cfg: ModelConfig,
    layout: mesh_lib.Parallelism,
    num_devices: int,
    *,
    per_device_batch_size: float = 1.0,
) -> dict[str, Any]:
  """Keyword overrides for `pyconfig.initialize` (decoupled_base_test.yml)."""
  kw: dict[str, Any] = dict(
      model_name=cfg.model_name,
      override_model_config=True,
      vocab_size=cfg.vocab_size,
      max_target_length=cfg.max_target_length,
      max_prefill_predict_length=cfg.max_target_length // 2,
      per_device_batch_size=per_device_batch_size,
      dtype=cfg.dtype,
      weight_dtype=cfg.weight_dtype,
      attention=cfg.attention,
      sparse_matmul=not cfg.dense_moe,
      megablox=not cfg.dense_moe,
      capacity_factor=cfg.capacity_factor,
      remat_policy=cfg.remat_policy,
      scan_layers=cfg.scan_layers,
      load_balance_loss_weight=cfg.load_balance_loss_weight,
      # Hidden states instead of full logits in train mode; we chunk ourselves.
      num_vocab_tiling=2,
      enable_dropout=False,
      enable_checkpointing=False,
      enable_tensorboard=False,
      skip_jax_distributed_system=True,
      dataset_type='synthetic',
      run_name='search_agent',
      base_output_directory='/tmp/search_agent_maxtext',
  )
  kw.update(dict(cfg.dims))
  kw.update(mesh_lib.maxtext_overrides(layout, num_devices))
  return kw
