"""Writes the HF import parity fixture: a tiny random Mixtral checkpoint and
its reference logits.

  python -m search_agent.model.tools.make_hf_reference \
      --fixture_dir=tests/fixtures/hf_tiny

Writes `model.safetensors` + `config.json` (HF Mixtral layout, random weights,
seed 0), `tokens.npy` and `logits.npy` (reference logits for those tokens) and
`reference.json` (which implementation produced them).

The reference comes from HF transformers' `MixtralForCausalLM` when PyTorch is
installed. transformers 5 has no JAX or NumPy models, so without torch (our
venv: torch is not a dependency and download.pytorch.org is unreachable here)
the script runs `mixtral_reference_logits`, a NumPy transcription of
transformers' modeling_mixtral forward (RMSNorm, rotate-half RoPE, GQA causal
attention, softmax router -> top-k -> renormalize, SwiGLU experts). Run it
with torch available to regenerate the fixture from transformers itself.
"""

import json
import os

from absl import app
from absl import flags
import numpy as np
from safetensors.numpy import save_file

_OUT = flags.DEFINE_string(
    'fixture_dir', 'tests/fixtures/hf_tiny', 'Output dir.'
)

HF_CONFIG = dict(
    architectures=['MixtralForCausalLM'],
    model_type='mixtral',
    hidden_size=64,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_local_experts=4,
    num_experts_per_tok=2,
    vocab_size=512,
    rms_norm_eps=1e-5,
    rope_theta=1e6,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    hidden_act='silu',
    torch_dtype='float32',
)
TOKENS = np.array([[(i * 37 + 11) % 512 for i in range(24)]], np.int32)


def random_weights(c: dict, seed: int = 0) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(seed)
  r = lambda *s: (rng.standard_normal(s) * 0.05).astype(np.float32)
  d, f, v = c['hidden_size'], c['intermediate_size'], c['vocab_size']
  h, kv, hd = c['num_attention_heads'], c['num_key_value_heads'], c['head_dim']
  w = {
      'model.embed_tokens.weight': r(v, d),
      'model.norm.weight': 1 + r(d),
      'lm_head.weight': r(v, d),
  }
  for l in range(c['num_hidden_layers']):
    p = f'model.layers.{l}.'
    w[p + 'input_layernorm.weight'] = 1 + r(d)
    w[p + 'post_attention_layernorm.weight'] = 1 + r(d)
    w[p + 'self_attn.q_proj.weight'] = r(h * hd, d)
    w[p + 'self_attn.k_proj.weight'] = r(kv * hd, d)
    w[p + 'self_attn.v_proj.weight'] = r(kv * hd, d)
    w[p + 'self_attn.o_proj.weight'] = r(d, h * hd)
    w[p + 'block_sparse_moe.gate.weight'] = r(c['num_local_experts'], d)
    for e in range(c['num_local_experts']):
      q = f'{p}block_sparse_moe.experts.{e}.'
      w[q + 'w1.weight'] = r(f, d)
      w[q + 'w2.weight'] = r(d, f)
      w[q + 'w3.weight'] = r(f, d)
  return w


def _rms(x, w, eps):
  x64 = x.astype(np.float64)
  return w * (x64 / np.sqrt(np.mean(x64**2, -1, keepdims=True) + eps))


def _rope(x, pos, theta):
  hd = x.shape[-1]
  inv = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
  ang = pos[:, None] * inv[None]
  cos = np.cos(np.concatenate([ang, ang], -1))[:, None]
  sin = np.sin(np.concatenate([ang, ang], -1))[:, None]
  x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
  return x * cos + np.concatenate([-x2, x1], -1) * sin


def _attention(x, w, p, c):
  t = x.shape[0]
  h, kv, hd = c['num_attention_heads'], c['num_key_value_heads'], c['head_dim']
  pos = np.arange(t, dtype=np.float64)
  q = (x @ w[p + 'self_attn.q_proj.weight'].T).reshape(t, h, hd)
  k = (x @ w[p + 'self_attn.k_proj.weight'].T).reshape(t, kv, hd)
  v = (x @ w[p + 'self_attn.v_proj.weight'].T).reshape(t, kv, hd)
  if p + 'self_attn.q_norm.weight' in w:  # Qwen3: per-head RMSNorm of q, k
    q = _rms(q, w[p + 'self_attn.q_norm.weight'], c['rms_norm_eps'])
    k = _rms(k, w[p + 'self_attn.k_norm.weight'], c['rms_norm_eps'])
  q, k = _rope(q, pos, c['rope_theta']), _rope(k, pos, c['rope_theta'])
  k, v = np.repeat(k, h // kv, axis=1), np.repeat(v, h // kv, axis=1)
  s = np.einsum('qhd,khd->hqk', q, k) / np.sqrt(hd)
  s = np.where(np.tril(np.ones((t, t), bool))[None], s, -np.inf)
  s = np.exp(s - s.max(-1, keepdims=True))
  s /= s.sum(-1, keepdims=True)
  o = np.einsum('hqk,khd->qhd', s, v).reshape(t, h * hd)
  return o @ w[p + 'self_attn.o_proj.weight'].T


# MoE tensor names: (router, expert prefix, gate, up, down) per HF layout.
_MOE_NAMES = {
    'mixtral': ('block_sparse_moe.gate', 'block_sparse_moe.experts', 'w1',
                'w3', 'w2'),
    'qwen3_moe': ('mlp.gate', 'mlp.experts', 'gate_proj', 'up_proj',
                  'down_proj'),
}  # fmt: skip


def _moe(x, w, p, c):
  router, experts, gate, up, down = _MOE_NAMES[c.get('model_type', 'mixtral')]
  logits = x @ w[f'{p}{router}.weight'].T
  probs = np.exp(logits - logits.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  top = np.argsort(-probs, -1)[:, : c['num_experts_per_tok']]
  renormalize = c.get('model_type', 'mixtral') == 'mixtral' or c.get(
      'norm_topk_prob', False
  )
  out = np.zeros_like(x)
  for i in range(x.shape[0]):
    ws = probs[i, top[i]]
    if renormalize:
      ws = ws / ws.sum()
    for e, we in zip(top[i], ws):
      q = f'{p}{experts}.{e}.'
      a = x[i] @ w[f'{q}{gate}.weight'].T
      g = a / (1 + np.exp(-a)) * (x[i] @ w[f'{q}{up}.weight'].T)
      out[i] += we * (g @ w[f'{q}{down}.weight'].T)
  return out


def mixtral_reference_logits(w: dict, c: dict, tokens: np.ndarray):
  """NumPy (float64) transcription of HF MixtralForCausalLM.forward.

  With `c['model_type'] == 'qwen3_moe'` it is Qwen3MoeForCausalLM.forward
  (per-head q/k RMSNorm, `mlp.*` expert names, `norm_topk_prob`).
  """
  x = w['model.embed_tokens.weight'][tokens[0]].astype(np.float64)
  eps = c['rms_norm_eps']
  for l in range(c['num_hidden_layers']):
    p = f'model.layers.{l}.'
    x = x + _attention(_rms(x, w[p + 'input_layernorm.weight'], eps), w, p, c)
    x = x + _moe(
        _rms(x, w[p + 'post_attention_layernorm.weight'], eps), w, p, c
    )
  x = _rms(x, w['model.norm.weight'], eps)
  return (x @ w['lm_head.weight'].T)[None].astype(np.float32)


def _transformers_logits(out_dir, tokens):
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  m = transformers.AutoModelForCausalLM.from_pretrained(
      out_dir, dtype=torch.float32
  ).eval()
  with torch.no_grad():
    return m(input_ids=torch.tensor(tokens)).logits.numpy()


def main(argv):
  del argv
  out = _OUT.value
  os.makedirs(out, exist_ok=True)
  w = random_weights(HF_CONFIG)
  save_file(w, os.path.join(out, 'model.safetensors'))
  with open(os.path.join(out, 'config.json'), 'w', encoding='utf-8') as f:
    json.dump(HF_CONFIG, f, indent=1)
  logits = _transformers_logits(out, TOKENS)
  source = 'transformers.MixtralForCausalLM (torch, float32)'
  if logits is None:
    logits = mixtral_reference_logits(w, HF_CONFIG, TOKENS)
    source = 'mixtral_reference_logits (NumPy float64 port of HF Mixtral)'
  np.save(os.path.join(out, 'tokens.npy'), TOKENS)
  np.save(os.path.join(out, 'logits.npy'), logits)
  with open(os.path.join(out, 'reference.json'), 'w', encoding='utf-8') as f:
    json.dump({'source': source, 'seed': 0}, f, indent=1)
  print(f'wrote {out}: logits {logits.shape} from {source}')


if __name__ == '__main__':
  app.run(main)
