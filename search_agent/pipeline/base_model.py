"""A small base model shipped in the repository: export, check, install.

The real recipe starts from a pretrained base model; the tiny pipeline can
start from one the project's own pretraining stage made. A base directory
holds

  model.safetensors   the parameters (float32, '/'-joined MaxText names)
  tokenizer.json, tokenizer_config.json
                      the tokenizer the parameters were trained with
  manifest.json       how it was made (command, stage settings, corpus
                      sha256, seed, step, final figures) and the sha256 of
                      every file above

`export` writes one from a pretraining workdir, `verify` checks the files
against the manifest, `install` writes what the pipeline's later stages
read: a tokenizer directory, or a trainer checkpoint holding the parameters
(DIR/checkpoints/<step>/state = {'params': ...}, what SFT's `init_from` and
the samplers restore).
"""

import hashlib
import json
import os
import shutil
from typing import Any, Mapping

import numpy as np
from safetensors import numpy as safetensors_np

from search_agent import digests

PARAMS_FILE = 'model.safetensors'
TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json')
MANIFEST_FILE = 'manifest.json'
# What `install` leaves in a stage workdir: the manifest, read by the report.
INSTALLED_FILE = 'base.json'


class BaseModelError(ValueError):
  """A base directory is incomplete or its files do not match its manifest."""


def flatten(tree: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
  """{'a': {'b': x}} -> {'a/b': x}."""
  out = {}
  for key, value in tree.items():
    name = f'{prefix}{key}'
    if isinstance(value, Mapping):
      out.update(flatten(value, name + '/'))
    else:
      out[name] = value
  return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
  """{'a/b': x} -> {'a': {'b': x}}."""
  out: dict[str, Any] = {}
  for name, value in flat.items():
    *parents, leaf = name.split('/')
    node = out
    for p in parents:
      node = node.setdefault(p, {})
    node[leaf] = value
  return out


def params_sha256(flat: Mapping[str, np.ndarray]) -> str:
  """A hash of the parameter values (names, shapes, dtypes, bytes)."""
  h = hashlib.sha256()
  for name in sorted(flat):
    a = np.ascontiguousarray(flat[name])
    h.update(f'{name}:{a.dtype.str}:{a.shape};'.encode())
    h.update(a.tobytes())
  return h.hexdigest()


def read_manifest(base_dir: str) -> dict:
  path = os.path.join(base_dir, MANIFEST_FILE)
  if not os.path.isfile(path):
    raise BaseModelError(f'{base_dir} holds no {MANIFEST_FILE}: not a base')
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def verify(base_dir: str) -> dict:
  """The manifest, after checking every listed file's sha256.

  Raises:
    BaseModelError: A file is missing or its bytes differ from the manifest.
  """
  manifest = read_manifest(base_dir)
  bad = []
  for name, want in manifest['files'].items():
    sha = digests.file_sha256(os.path.join(base_dir, name), missing_ok=True)
    if not sha:
      bad.append(f'{name} missing')
    elif sha != want['sha256']:
      bad.append(f'{name} sha256 {sha[:12]}, manifest'
                 f' {want["sha256"][:12]}')  # fmt: skip
  if bad:
    raise BaseModelError(
        f'base {base_dir} does not match its manifest: {"; ".join(bad)}'
        ' (regenerate it: python -m search_agent.pipeline.make_base)'
    )
  return manifest


def load_params(base_dir: str) -> dict[str, np.ndarray]:
  """The flat parameters of a base directory."""
  return safetensors_np.load_file(os.path.join(base_dir, PARAMS_FILE))


def export(
    flat_params: Mapping[str, Any],
    tokenizer_dir: str,
    out_dir: str,
    made: Mapping[str, Any],
) -> dict:
  """Writes a base directory; returns its manifest.

  Args:
    flat_params: '/'-joined name -> array (cast to float32).
    tokenizer_dir: Holds TOKENIZER_FILES.
    out_dir: The base directory (created).
    made: How it was made (command, settings, corpus hash, seed, ...):
      the manifest's other fields.
  """
  os.makedirs(out_dir, exist_ok=True)
  flat = {
      k: np.ascontiguousarray(np.asarray(v, dtype=np.float32))
      for k, v in flat_params.items()
  }
  safetensors_np.save_file(flat, os.path.join(out_dir, PARAMS_FILE))
  for name in TOKENIZER_FILES:
    shutil.copyfile(
        os.path.join(tokenizer_dir, name), os.path.join(out_dir, name)
    )
  files = {}
  for name in (PARAMS_FILE, *TOKENIZER_FILES):
    path = os.path.join(out_dir, name)
    files[name] = {
        'sha256': digests.file_sha256(path),
        'bytes': os.path.getsize(path),
    }
  manifest = {
      **made,
      'parameters': int(sum(a.size for a in flat.values())),
      'params_sha256': params_sha256(flat),
      'files': files,
  }
  with open(os.path.join(out_dir, MANIFEST_FILE), 'w', encoding='utf-8') as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write('\n')
  return manifest


def install_tokenizer(base_dir: str, workdir: str) -> dict:
  """Copies the checked tokenizer into `workdir` (a tokenizer stage's)."""
  manifest = verify(base_dir)
  os.makedirs(workdir, exist_ok=True)
  for name in TOKENIZER_FILES:
    shutil.copyfile(os.path.join(base_dir, name), os.path.join(workdir, name))
  _record(manifest, workdir)
  return manifest


def install_params(base_dir: str, workdir: str) -> dict:
  """Writes the checked parameters as a trainer checkpoint in `workdir`
  (what SFT's init_from and the samplers restore), and the tokenizer in
  `workdir/tokenizer`."""
  # pylint: disable-next=g-import-not-at-top
  from search_agent.train import checkpoint as checkpoint_lib

  manifest = verify(base_dir)
  params = unflatten(load_params(base_dir))
  ckpt = checkpoint_lib.Checkpointer(
      os.path.join(workdir, 'checkpoints'), checkpoint_lib.CheckpointConfig()
  )
  try:
    ckpt.save(int(manifest.get('step', 0)), {'params': params}, {})
  finally:
    ckpt.close()
  install_tokenizer(base_dir, os.path.join(workdir, 'tokenizer'))
  _record(manifest, workdir)
  return manifest


def _record(manifest: dict, workdir: str) -> None:
  with open(os.path.join(workdir, INSTALLED_FILE), 'w', encoding='utf-8') as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
