"""The shipped base model: export, hash check, import into a run."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from search_agent import digests
from search_agent.pipeline import base_model
from search_agent.pipeline import plan
from search_agent.train import checkpoint as checkpoint_lib
from tpu_configs import pipeline as pipeline_config

PARAMS = {
    'params/decoder/layer/w': np.arange(6, dtype=np.float32).reshape(2, 3),
    'params/token_embedder/embedding': np.ones((4, 2), np.float32),
}
DIMS = {'model.dims.base_num_decoder_layers': '4'}


def _base(tmp_path, dims=DIMS) -> str:
  tok = tmp_path / 'tok'
  tok.mkdir()
  for name in base_model.TOKENIZER_FILES:
    (tok / name).write_text(f'{{"file": "{name}"}}')
  made = {
      'step': 7,
      'stages': {'pretrain': {'fingerprint': {'overrides': dict(dims)}}},
      'final': {'copy_nll': 0.9},
  }
  out = str(tmp_path / 'base')
  base_model.export(PARAMS, str(tok), out, made)
  return out


def test_export_then_verify_and_a_changed_byte_is_caught(tmp_path):
  base = _base(tmp_path)
  m = base_model.verify(base)
  assert m['step'] == 7 and m['parameters'] == 14
  assert m['params_sha256'] == base_model.params_sha256(PARAMS)
  assert set(m['files']) == {'model.safetensors', *base_model.TOKENIZER_FILES}
  # The export is byte-for-byte reproducible: the same values, the same files.
  again = base_model.export(
      PARAMS, str(tmp_path / 'tok'), str(tmp_path / 'b2'), {'step': 7}
  )
  assert again['files'] == m['files']
  with open(os.path.join(base, 'tokenizer.json'), 'a') as f:
    f.write(' ')
  with pytest.raises(base_model.BaseModelError, match='tokenizer.json sha256'):
    base_model.verify(base)


def test_install_writes_a_checkpoint_sft_and_the_samplers_restore(tmp_path):
  base = _base(tmp_path)
  work = str(tmp_path / 'pretrain')
  base_model.install_params(base, work)
  like = base_model.unflatten(
      {k: jnp.zeros(v.shape, v.dtype) for k, v in PARAMS.items()}
  )
  ckpt = checkpoint_lib.Checkpointer(
      os.path.join(work, 'checkpoints'), checkpoint_lib.CheckpointConfig()
  )
  assert ckpt.latest_step() == 7
  got = base_model.flatten(ckpt.restore_params(7, like))
  ckpt.close()
  for name, value in PARAMS.items():
    np.testing.assert_array_equal(np.asarray(got[name]), value)
  assert os.path.isfile(os.path.join(work, 'tokenizer', 'tokenizer.json'))
  assert json.load(open(os.path.join(work, 'base.json')))['step'] == 7


def test_a_base_path_turns_tokenizer_and_pretrain_into_checked_imports(
    tmp_path,
):
  base = _base(tmp_path)
  c = pipeline_config.get_config('learn')
  c.base.path = base
  stages = {s.name: s for s in plan.build(c)}
  for name, part in (('tokenizer', 'tokenizer'), ('pretrain', 'params')):
    s = stages[name]
    assert s.module == 'search_agent.pipeline.import_base'
    assert s.flags['part'] == part
    assert s.flags['manifest_sha256'] == digests.file_sha256(
        os.path.join(base, 'manifest.json')
    )
  assert stages['sft'].overrides['init_from'] == '{pretrain}'
  c.model.dims = ()  # the 2-layer model cannot start from a 4-layer base
  with pytest.raises(plan.PlanError, match='model sizes'):
    plan.build(c)


def test_tiny_imports_the_shipped_base_whose_files_match_its_manifest():
  m = base_model.verify(pipeline_config.SHIPPED_BASE)
  size = sum(f['bytes'] for f in m['files'].values())
  assert size < 5_000_000  # a few MB in the repository
  assert m['corpus_sha256'] == digests.file_sha256(plan.BUNDLED_CORPUS)
  assert 'make_base' in m['command']
  c = pipeline_config.get_config('tiny')
  stages = {s.name: s for s in plan.build(c)}
  assert stages['pretrain'].flags['base'] == pipeline_config.SHIPPED_BASE
  # The pretraining it stands for: SFT rehearses the same text mix.
  pretrain = m['stages']['pretrain']['fingerprint']['overrides']
  sft = stages['sft'].overrides
  assert pretrain['data.synthetic_fraction'] == str(
      sft['data.synthetic_fraction']
  )
  assert pretrain['total_updates'] == str(c.pretrain.updates)
