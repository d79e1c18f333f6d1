"""HF safetensors -> MaxText import: parity with reference logits.

The fixture (tests/fixtures/hf_tiny) is a random tiny Mixtral in HF layout
with reference logits; regenerate it with
`python -m search_agent.model.tools.make_hf_reference` (see its docstring:
HF transformers when torch is installed, else the NumPy port of HF Mixtral).
"""

import dataclasses
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import maxtext_model
from search_agent.model.tools import make_hf_reference


@pytest.fixture(scope='module')
def fixture_dir(repo_root):
  return repo_root / 'tests' / 'fixtures' / 'hf_tiny'


@pytest.fixture(scope='module')
def cfg(fixture_dir):
  base = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=32, logits_chunk=8
  )
  return hf_import.model_config_for_hf(str(fixture_dir), base)


def test_config_from_hf(cfg):
  dims = dict(cfg.dims)
  assert cfg.vocab_size == 512 and cfg.decoder_block == 'mixtral'
  assert dims['base_emb_dim'] == 64 and dims['base_moe_mlp_dim'] == 64
  assert dims['num_experts'] == 4 and dims['num_experts_per_tok'] == 2
  assert dims['rope_max_timescale'] == 1e6


def test_fixture_reference_is_reproducible(fixture_dir):
  """The stored logits are what the reference script computes."""
  w = make_hf_reference.random_weights(make_hf_reference.HF_CONFIG)
  got = make_hf_reference.mixtral_reference_logits(
      w, make_hf_reference.HF_CONFIG, np.load(fixture_dir / 'tokens.npy')
  )
  source = json.loads((fixture_dir / 'reference.json').read_text())['source']
  tol = 1e-6 if 'NumPy' in source else 1e-4
  np.testing.assert_allclose(got, np.load(fixture_dir / 'logits.npy'), atol=tol)


@pytest.mark.maxtext
@pytest.mark.slow
def test_imported_logits_match_reference(tmp_path, fixture_dir, cfg):
  path = hf_import.convert_in_subprocess(
      str(fixture_dir), str(tmp_path / 'mt'), cfg
  )
  model = maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )
  params = hf_import.load_params(model, path)
  toks = jnp.asarray(np.load(fixture_dir / 'tokens.npy'))
  ref = np.load(fixture_dir / 'logits.npy')
  pos = jnp.arange(toks.shape[1])[None]
  with model.rules():
    out = maxtext_model.forward(
        model.graphdef, params, model.rest, toks, pos, jnp.ones_like(toks)
    )
    logits = maxtext_model.logits_from_hidden(
        model.graphdef, params, model.rest, out.hidden_btd
    )
  err = np.abs(np.asarray(logits) - ref).max()
  print(f'\nMaxText vs reference logits: max|diff| = {err:.2e}')
  assert err < 1e-5
  assert (np.asarray(logits).argmax(-1) == ref.argmax(-1)).all()


def test_bad_checkpoints(tmp_path, fixture_dir):
  base = families.model_preset('tiny')
  with pytest.raises(hf_import.HFImportError, match='config.json'):
    hf_import.model_config_for_hf(str(tmp_path), base)
  (tmp_path / 'config.json').write_text(json.dumps({'model_type': 'llama'}))
  with pytest.raises(hf_import.HFImportError, match='not supported'):
    hf_import.model_config_for_hf(str(tmp_path), base)
  with pytest.raises(hf_import.HFImportError, match='safetensors'):
    hf_import.convert(str(tmp_path), str(tmp_path / 'o'), base)
  del fixture_dir


def test_reference_script_pulse(tmp_path, repo_root, fixture_dir):
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  proc = subprocess.run(
      [
          sys.executable,
          '-m',
          'search_agent.model.tools.make_hf_reference',
          f'--fixture_dir={tmp_path}',
      ],
      cwd=repo_root,
      env=env,
      capture_output=True,
      text=True,
      timeout=300,
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  for name in ('tokens.npy', 'logits.npy'):
    np.testing.assert_array_equal(
        np.load(tmp_path / name), np.load(fixture_dir / name)
    )
  assert json.loads((tmp_path / 'config.json').read_text()) == json.loads(
      (fixture_dir / 'config.json').read_text()
  )
