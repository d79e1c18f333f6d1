"""Mesh axes, logical-axis rules and parallel layouts, declared once.

We parallelize over five mesh axes: `data`, `fsdp`, `expert`, `tensor`,
`context`. Parameters and activations carry MaxText's logical names only;
`LOGICAL_RULES` maps each logical name to mesh axes, exactly one rule per name
(MaxText's base.yml lists some names twice, so order matters there; here it
does not). MaxText's other mesh axes (stage, fsdp_transpose, tensor_sequence,
...) stay in the device mesh at size 1 because MaxText code names them; no rule
maps to them. Other layouts are `Parallelism` values (see tpu_configs/model/).
"""

import dataclasses
import math

MESH_AXES = ('data', 'fsdp', 'expert', 'tensor', 'context')

_BATCH = ('data', 'fsdp', 'expert')
_EMBED_W = ('fsdp', 'context', 'expert')

# logical name -> mesh axes. One entry per name.
LOGICAL_RULES: dict[str, tuple[str, ...]] = {
    # Vocabulary embedding and logits.
    'activation_embed_and_logits_batch': _BATCH,
    'activation_embed_and_logits_batch_sequence': _BATCH + ('context',),
    'activation_vocab': ('tensor',),
    'vocab': ('tensor',),
    'embed_vocab': _EMBED_W,
    'num_tile': (),
    # Attention activations.
    'activation_batch_attn': _BATCH,
    'activation_input_length_attn': ('context',),
    'activation_heads': ('tensor',),
    'activation_kv_heads': ('tensor',),
    'activation_length_attn': ('context',),
    'activation_q_length': ('context',),
    'activation_kv_length': (),
    'activation_embed_attn': ('tensor',),
    'activation_kv': ('tensor',),
    'activation_kv_batch': _BATCH,
    'activation_kv_head_dim': ('tensor',),
    # Attention weights.
    'heads': ('tensor',),
    'q_heads': ('tensor',),
    'kv_heads': ('tensor',),
    'qkv': (),
    'kv': (),
    'kv_head_dim': (),
    'q_lora': _EMBED_W,
    'q_lora_up_proj': (),
    'kv_lora': _EMBED_W,
    'kv_lora_up_proj': (),
    'embed_attn': _EMBED_W,
    # Mixture of experts.
    'activation_batch_moe': _BATCH,
    'activation_length_moe': ('context',),
    'activation_norm_length_moe': ('context',),
    'activation_embed_moe': ('tensor',),
    'activation_mlp_moe': ('tensor',),
    'activation_exp': ('expert',),
    'exp': ('expert',),
    'mlp_moe': ('tensor',),
    'embed_moe': ('fsdp', 'context'),
    'embed_router': ('fsdp', 'context'),
    # Dense layers and model structure.
    'segment_ids_batch': _BATCH,
    'activation_mlp': ('tensor',),
    'activation_batch': _BATCH,
    'activation_length': ('context',),
    'activation_norm_length': ('context',),
    'activation_embed': ('tensor',),
    'activation_stage': (),
    'mlp': ('tensor',),
    'gdn_head': ('tensor',),
    'embed': _EMBED_W,
    'norm': ('tensor',),
    'layers': (),
    'diloco': (),
    'engram_dim': ('tensor',),
    'dense_layers': (),
    'moe_layers': (),
    'local_layers': (),
    'mhc': (),
    'circular_repeats': (),
    # Inference: prefill, decode, KV cache.
    'prefill_activation_length': ('context',),
    'prefill_activation_norm_length': ('context',),
    'activation_prefill_kv_batch': _BATCH,
    'decode_batch': _BATCH,
    'decode_length': (),
    'cache_heads': ('tensor',),
    'paged_kv_heads': ('tensor',),
    'cache_batch_prefill': (),
    'cache_batch': (),
    'cache_heads_none': (),
    'cache_kv': (),
    'cache_sequence': (),
    'num_pages': (),
    'tokens_per_page': (),
    'paged_kv_head_dim_size': (),
    'mlp_no_fsdp': ('tensor',),
    'exp_with_fsdp': ('fsdp',),
}


class LayoutError(ValueError):
  """A parallel layout does not fit the devices it is given."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Parallelism:
  """Sizes of the mesh axes within a slice (ICI) and across slices (DCN).

  Attributes:
    data: Pure data parallelism (replicated parameters).
    fsdp: Fully sharded data parallelism; -1 takes the remaining devices.
    expert: Expert parallelism (also shards the batch outside MoE layers).
    tensor: Tensor parallelism over heads and MLP columns.
    context: Context (sequence) parallelism.
    dcn_data: Data parallelism across slices.
  """

  data: int = 1
  fsdp: int = -1
  expert: int = 1
  tensor: int = 1
  context: int = 1
  dcn_data: int = 1

  def sizes(self, num_devices: int) -> dict[str, int]:
    """Resolves the -1 axis; raises LayoutError if the layout does not fit."""
    sizes = {a: getattr(self, a) for a in MESH_AXES}
    per_slice, rem = divmod(num_devices, self.dcn_data)
    if rem:
      raise LayoutError(
          f'{num_devices} devices do not split into dcn_data={self.dcn_data}'
          ' slices; change dcn_data'
      )
    free = [a for a, n in sizes.items() if n == -1]
    fixed = math.prod(n for n in sizes.values() if n != -1)
    if len(free) > 1:
      raise LayoutError(f'only one axis may be -1, got {free}')
    if free:
      if per_slice % fixed:
        raise LayoutError(
            f'{per_slice} devices per slice are not divisible by the fixed'
            f' axes {sizes} (product {fixed}); change the layout'
        )
      sizes[free[0]] = per_slice // fixed
    elif fixed != per_slice:
      raise LayoutError(
          f'layout {sizes} uses {fixed} devices per slice but there are'
          f' {per_slice}; set one axis to -1 or fix the sizes'
      )
    return sizes


def maxtext_overrides(layout: Parallelism, num_devices: int) -> dict:
  """MaxText config keys for this layout: ici_*/dcn_* sizes and the rules."""
  sizes = layout.sizes(num_devices)
  out = {f'ici_{a}_parallelism': n for a, n in sizes.items()}
  out['dcn_data_parallelism'] = layout.dcn_data
  out['dcn_fsdp_parallelism'] = 1
  out['logical_axis_rules'] = [
      [name, list(axes)] for name, axes in LOGICAL_RULES.items()
  ]
  return out
