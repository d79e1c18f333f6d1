"""An HF checkpoint directory: sharded safetensors, index, config, tokenizer.

`save` writes what `transformers.from_pretrained`, vLLM and SGLang read:
`model.safetensors` (or `model-0000k-of-0000n.safetensors` plus
`model.safetensors.index.json` past `max_shard_bytes`, as the Hub shards),
the tokenizer files of a base checkpoint and `config.json`, written last.
`base_tensors` reads named tensors of a base checkpoint (parts a MaxText
model does not hold). NumPy and safetensors only.
"""

import json
import os
import shutil
from typing import Any, Mapping, Sequence

import numpy as np
import safetensors
from safetensors import numpy as safetensors_np

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


def base_tensors(hf_dir: str, prefixes: Sequence[str]) -> dict[str, Any]:
  """The tensors of `hf_dir`'s safetensors files named with a prefix."""
  out = {}
  for fname in sorted(os.listdir(hf_dir)):
    if not fname.endswith('.safetensors'):
      continue
    with safetensors.safe_open(
        os.path.join(hf_dir, fname), framework='numpy'
    ) as f:
      for name in f.keys():
        if name.startswith(tuple(prefixes)):
          out[name] = f.get_tensor(name)
  return out
