"""Training FLOPs per token of the MaxText MoE, and the machine's peak.

Per token, with d = emb, L = layers, q/kv heads of size h, E experts of
which k are used (all E when the MoE runs dense, as on CPU), MLP width f,
vocab V and row length T:

  matmul parameters per token  N = L * (d*(Hq+2*Hkv)*h + Hq*h*d    # q,k,v,o
                                        + d*E                        # router
                                        + E' * 3*d*f)                # experts
                                   + d*V                             # LM head
  attention (scores and values) A = L * 2 * 2 * T * Hq*h             # full T^2
  forward = 2*N + A;  training = 3 * forward (backward = 2x forward)
  with full rematerialisation one more forward of the decoder layers:
  + 2*(N - d*V) + A.

E' is E for a dense MoE and k otherwise. MaxText's dot-product attention
computes the whole T x T score matrix of a packed row (segments masked, not
skipped), so A counts T per token, not the causal T/2.
"""

import os

from search_agent.model import config as config_lib


def flops_per_token(cfg: config_lib.ModelConfig, seq_len: int) -> dict:
  """{'matmul_params', 'attention', 'train', 'train_remat'} per token."""
  dims = dict(cfg.dims)
  d, h = dims['base_emb_dim'], dims['head_dim']
  hq, hkv = dims['base_num_query_heads'], dims['base_num_kv_heads']
  layers, f = dims['base_num_decoder_layers'], dims['base_moe_mlp_dim']
  e, k = dims['num_experts'], dims['num_experts_per_tok']
  active = e if cfg.dense_moe else k
  layer = d * (hq + 2 * hkv) * h + hq * h * d + d * e + active * 3 * d * f
  n = layers * layer + d * cfg.vocab_size
  attention = layers * 4 * seq_len * hq * h
  forward = 2 * n + attention
  remat = 2 * (n - d * cfg.vocab_size) + attention
  return {
      'matmul_params': n,
      'attention': attention,
      'train': 3 * forward,
      'train_remat': 3 * forward + remat,
  }


def train_flops(per_token: dict, remat_policy: str) -> int:
  """Training FLOPs per token under a MaxText remat policy.

  'full' (and 'none', which MaxText also rematerialises) recompute the whole
  decoder forward; 'minimal' saves the projections' and MLPs' dots and
  recomputes the attention scores only.
  """
  if remat_policy == 'minimal':
    return per_token['train'] + per_token['attention']
  return per_token['train_remat']


# Dense bf16 peak FLOP/s per chip, by the start of jax's device_kind.
_CHIP_PEAK = (
    ('TPU v6', 918e12),
    ('TPU v5p', 459e12),
    ('TPU v5', 197e12),  # v5e / v5 lite
    ('TPU v4', 275e12),
    ('NVIDIA H200', 989e12),
    ('NVIDIA H100', 989e12),
    ('NVIDIA A100', 312e12),
)


def peak_flops(device_kinds: list[str], platform: str) -> float | None:
  """Peak FLOP/s of the devices a run uses, or None if a kind is unknown.

  CPU: `cpu_peak_flops` once for the host (simulated devices share it).
  """
  if platform == 'cpu':
    return cpu_peak_flops()
  total = 0.0
  for kind in device_kinds:
    peak = next((p for k, p in _CHIP_PEAK if kind.startswith(k)), None)
    if peak is None:
      return None
    total += peak
  return total


def cpu_peak_flops(flops_per_cycle: int = 64) -> float:
  """Peak fp32 FLOP/s of this host's CPUs: cores x clock x FLOP/cycle.

  64 FLOP/cycle is two AVX-512 FMA units (16 fp32 lanes, 2 FLOPs each).
  """
  mhz = 0.0
  try:
    with open('/proc/cpuinfo', encoding='utf-8') as f:
      for line in f:
        if line.startswith('cpu MHz'):
          mhz = max(mhz, float(line.split(':')[1]))
  except OSError:
    pass
  cores = len(os.sched_getaffinity(0))
  return cores * (mhz or 2000.0) * 1e6 * flops_per_cycle
