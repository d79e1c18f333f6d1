"""MaxText -> HF safetensors export: round trips and logits.

mixtral: the HF fixture (tests/fixtures/hf_tiny) is imported and exported:
the files come back bit for bit; qwen3_moe: a tiny random MaxText model is
exported and imported again: the parameters come back bit for bit; the
same for a tiny Qwen3.5 (hybrid layers). In both, the exported tensors' logits under the project's HF
reference (`make_hf_reference.mixtral_reference_logits`, a NumPy port of
HF's Mixtral / Qwen3-MoE forward: torch is not installed) equal MaxText's.
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
from safetensors import numpy as safetensors_np
import transformers

from search_agent.model import families
from search_agent.model import hf_export
from search_agent.model import hf_files
from search_agent.model import hf_import
from search_agent.model import maxtext_model
from search_agent.model.tools import make_hf_reference
from search_agent.train import checkpoint as checkpoint_lib

TOKENS = make_hf_reference.TOKENS


@pytest.fixture(scope='module')
def fixture_dir(repo_root):
  return repo_root / 'tests' / 'fixtures' / 'hf_tiny'


def _short(cfg):
  return dataclasses.replace(cfg, max_target_length=32, logits_chunk=8)


def _logits(model, params):
  toks = jnp.asarray(TOKENS)
  pos = jnp.arange(toks.shape[1])[None]
  with model.rules():
    out = maxtext_model.forward(
        model.graphdef, params, model.rest, toks, pos, jnp.ones_like(toks)
    )
    return np.asarray(
        maxtext_model.logits_from_hidden(
            model.graphdef, params, model.rest, out.hidden_btd
        )
    )


def _load_hf(path):
  tensors = safetensors_np.load_file(os.path.join(path, 'model.safetensors'))
  with open(os.path.join(path, 'config.json'), encoding='utf-8') as f:
    return tensors, json.load(f)


def _assert_trees_equal(a, b):
  for (path, x), y in zip(
      jax.tree_util.tree_flatten_with_path(a)[0], jax.tree.leaves(b)
  ):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y), str(path))


@pytest.fixture(scope='module')
def torch():
  """torch, or a skip (before any model is built): not in requirements.txt."""
  return pytest.importorskip('torch')


@pytest.fixture(scope='module')
def mixtral(tmp_path_factory, fixture_dir):
  """(model, params imported from the HF fixture)."""
  cfg = hf_import.model_config_for_hf(
      str(fixture_dir), _short(families.model_preset('tiny'))
  )
  path = hf_import.convert_in_subprocess(
      str(fixture_dir), str(tmp_path_factory.mktemp('mt')), cfg
  )
  model = maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )
  return model, hf_import.load_params(model, path)


@pytest.mark.maxtext
@pytest.mark.slow
def test_mixtral_import_export_import(tmp_path, fixture_dir, mixtral):
  model, params = mixtral
  out = tmp_path / 'hf'
  files = hf_export.export(
      params,
      model.logical_axes,
      model.config,
      model.mt_config,
      str(out),
      hf_base_dir=str(fixture_dir),
      dtype='float32',
  )
  assert files == ['model.safetensors', 'config.json']
  got, config = _load_hf(out)
  want, base = _load_hf(fixture_dir)
  assert sorted(got) == sorted(want)
  for name in want:  # head_dim 16: the query scale 1/4 round-trips exactly
    np.testing.assert_array_equal(got[name], want[name], name)
  assert {k: config[k] for k in base if k != 'torch_dtype'} == {
      k: v for k, v in base.items() if k != 'torch_dtype'
  }
  hf_cfg = transformers.AutoConfig.from_pretrained(str(out))
  assert hf_cfg.model_type == 'mixtral' and hf_cfg.num_local_experts == 4

  ref = make_hf_reference.mixtral_reference_logits(got, config, TOKENS)
  ours = _logits(model, params)
  err = np.abs(ours - ref).max()
  print(f'\nmixtral: exported-reference vs MaxText logits max|diff| {err:.2e}')
  assert err < 1e-5

  # The exported files are the imported ones bit for bit, so importing them
  # again gives these params; test_qwen3_moe_... runs that second import.


@pytest.mark.maxtext
@pytest.mark.slow
def test_qwen3_moe_export_import_and_logits(tmp_path):
  dims = dict(families.model_preset('tiny').dims, base_moe_mlp_dim=32)
  cfg = dataclasses.replace(
      _short(families.model_preset('qwen3-30b-a3b')),
      dims=tuple(sorted(dims.items())),
      vocab_size=512,
      dtype='float32',
      weight_dtype='float32',
      attention='dot_product',
      dense_moe=True,
  )
  model = maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )
  # Perturb every parameter so the norms' scales are not all ones.
  leaves, treedef = jax.tree.flatten(model.params)
  keys = jax.random.split(jax.random.key(1), len(leaves))
  params = jax.tree.unflatten(
      treedef,
      [x + 0.05 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)],
  )
  out = tmp_path / 'hf'
  hf_export.export(
      params,
      model.logical_axes,
      cfg,
      model.mt_config,
      str(out),
      dtype='float32',
  )
  tensors, config = _load_hf(out)
  assert config['model_type'] == 'qwen3_moe' and config['norm_topk_prob']
  assert 'model.layers.1.self_attn.k_norm.weight' in tensors
  assert 'model.layers.0.mlp.experts.3.down_proj.weight' in tensors
  assert len(tensors) == 3 + 2 * (9 + 4 * 3)  # 9 + 4 experts x 3 a layer

  ref = make_hf_reference.mixtral_reference_logits(tensors, config, TOKENS)
  err = np.abs(_logits(model, params) - ref).max()
  print(
      f'\nqwen3_moe: exported-reference vs MaxText logits max|diff| {err:.2e}'
  )
  assert err < 1e-5

  imported_cfg = hf_import.model_config_for_hf(
      str(out), dataclasses.replace(cfg, dims=())
  )
  for k in ('base_emb_dim', 'base_moe_mlp_dim', 'num_experts', 'head_dim'):
    assert dict(imported_cfg.dims)[k] == dims[k]
  path = hf_import.convert_in_subprocess(
      str(out), str(tmp_path / 'mt'), imported_cfg
  )
  _assert_trees_equal(hf_import.load_params(model, path), params)


@pytest.mark.maxtext
@pytest.mark.slow
def test_qwen3_5_export_import(tmp_path):
  """Qwen3.5 (gated-delta-net + attention cycles of 4, shared expert).

  No logits check: the project has no HF reference of Qwen3.5's forward
  (torch is not installed); MaxText's own tables map both ways.
  """
  dims = dict(
      families.model_preset('tiny').dims,
      base_num_decoder_layers=4,  # one cycle: 3 linear + 1 full attention
      base_moe_mlp_dim=32,
      base_mlp_dim=32,
      gdn_key_head_dim=16,
      gdn_value_head_dim=16,
      gdn_num_key_heads=2,
      gdn_num_value_heads=4,
      gdn_chunk_size=8,
      use_mrope=False,  # text only
  )
  cfg = dataclasses.replace(
      _short(families.model_preset('qwen3.5-35b-a3b')),
      dims=tuple(sorted(dims.items())),
      vocab_size=512,
      dtype='float32',
      weight_dtype='float32',
      dense_moe=True,
      attention='dot_product',
  )
  model = maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )
  leaves, treedef = jax.tree.flatten(model.params)
  keys = jax.random.split(jax.random.key(2), len(leaves))
  params = jax.tree.unflatten(
      treedef,
      [x + 0.05 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)],
  )
  out = tmp_path / 'hf'
  hf_export.export(
      params,
      model.logical_axes,
      cfg,
      model.mt_config,
      str(out),
      dtype='float32',
  )
  tensors, config = _load_hf(out)
  assert config['model_type'] == 'qwen3_5_moe'
  text = config['text_config']
  assert text['layer_types'] == ['linear_attention'] * 3 + ['full_attention']
  assert text['hidden_size'] == 64 and text['num_experts'] == 4
  prefix = 'model.language_model.layers'
  assert f'{prefix}.0.linear_attn.A_log' in tensors
  assert f'{prefix}.3.self_attn.q_norm.weight' in tensors
  assert f'{prefix}.3.mlp.shared_expert_gate.weight' in tensors
  loaded = transformers.AutoConfig.from_pretrained(str(out))
  assert loaded.text_config.num_hidden_layers == 4

  imported_cfg = hf_import.model_config_for_hf(
      str(out),
      dataclasses.replace(
          cfg, dims=(('gdn_chunk_size', 8), ('use_mrope', False))
      ),
  )
  for k, v in dims.items():
    assert dict(imported_cfg.dims)[k] == v, k
  path = hf_import.convert_in_subprocess(
      str(out), str(tmp_path / 'mt'), imported_cfg
  )
  _assert_trees_equal(hf_import.load_params(model, path), params)


@pytest.mark.maxtext
@pytest.mark.slow
def test_binary_exports_a_trainer_checkpoint(
    tmp_path, repo_root, fixture_dir, mixtral
):
  """Pulse: export_hf on a workdir written by the trainers' Checkpointer."""
  model, params = mixtral
  ckpt = checkpoint_lib.Checkpointer(
      tmp_path / 'run' / 'checkpoints',
      checkpoint_lib.CheckpointConfig(every=1, keep=2),
  )
  ckpt.save(3, {'params': params, 'opt_state': {'count': 3}}, {'position': 3})
  ckpt.close()
  model_json = json.dumps(families.as_dict(model.config))
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  proc = subprocess.run(
      [
          sys.executable,
          '-m',
          'search_agent.model.tools.export_hf',
          f'--checkpoint={tmp_path / "run"}',
          f'--model_json={model_json}',
          f'--hf_base_dir={fixture_dir}',
          f'--out_dir={tmp_path / "hf"}',
      ],
      cwd=repo_root,
      env=env,
      capture_output=True,
      text=True,
      timeout=600,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / 'hf')
  assert 'checkpoint_manager.py' not in proc.stderr  # orbax INFO quieted
  got, config = _load_hf(tmp_path / 'hf')
  want, _ = _load_hf(fixture_dir)
  assert config['torch_dtype'] == 'bfloat16'
  for name in want:
    assert got[name].dtype == jnp.bfloat16
    np.testing.assert_array_equal(
        got[name], want[name].astype(jnp.bfloat16), name
    )


def test_sharded_save_writes_an_index_and_tokenizer_files(tmp_path):
  base = tmp_path / 'base'
  base.mkdir()
  (base / 'tokenizer.json').write_text('{"model": {}}')
  (base / 'README.md').write_text('not copied')
  tensors = {f't{i}': np.full((256,), i, np.float32) for i in range(5)}
  files = hf_files.save(
      str(tmp_path / 'out'),
      tensors,
      {'model_type': 'mixtral'},
      tokenizer_dir=str(base),
      max_shard_bytes=2 * 1024,
  )
  shards = [f for f in files if f.endswith('.safetensors')]
  assert shards == [f'model-0000{k}-of-00003.safetensors' for k in (1, 2, 3)]
  assert files[-3:] == [hf_files.INDEX_FILE, 'tokenizer.json', 'config.json']
  index = json.loads((tmp_path / 'out' / hf_files.INDEX_FILE).read_text())
  assert index['metadata']['total_size'] == 5 * 1024
  loaded = {}
  for shard in shards:
    loaded.update(safetensors_np.load_file(str(tmp_path / 'out' / shard)))
  assert {n: index['weight_map'][n] for n in loaded} == index['weight_map']
  for name, value in tensors.items():
    np.testing.assert_array_equal(loaded[name], value)


def test_base_tensors_carry_over_by_prefix(tmp_path):
  safetensors_np.save_file(
      {'model.visual.w': np.ones(3, np.float32), 'lm_head.weight': np.ones(2)},
      str(tmp_path / 'model-00001-of-00001.safetensors'),
  )
  got = hf_files.base_tensors(str(tmp_path), hf_export.CARRIED_PREFIXES)
  assert list(got) == ['model.visual.w']


def test_refusals(tmp_path, fixture_dir):
  tiny = families.model_preset('tiny')

  class Mt:
    base_emb_dim = 32  # the fixture says 64
    logits_via_embedding = False

  for k in hf_import.DIMS['mixtral'].values():
    setattr(Mt, k, getattr(Mt, k, 1))
  base = hf_import.read_hf_config(str(fixture_dir))
  with pytest.raises(hf_export.HFExportError, match='hidden_size: base 64'):
    hf_export.hf_config_for(tiny, Mt, base)
  with pytest.raises(hf_export.HFExportError, match='no HF export'):
    hf_export.hf_config_for(
        dataclasses.replace(tiny, decoder_block='llama2'), Mt
    )
  with pytest.raises(hf_export.HFExportError, match='exactly one'):
    hf_export.export_checkpoint(tiny, str(tmp_path))


@pytest.mark.maxtext
@pytest.mark.slow
def test_exported_mixtral_logits_under_transformers(torch, mixtral, tmp_path):
  """HF transformers itself as the reference, where torch is installed."""
  model, params = mixtral
  hf_export.export(
      params,
      model.logical_axes,
      model.config,
      model.mt_config,
      str(tmp_path),
      dtype='float32',
  )
  hf_model = transformers.AutoModelForCausalLM.from_pretrained(
      str(tmp_path), dtype=torch.float32
  ).eval()
  with torch.no_grad():
    ref = hf_model(input_ids=torch.tensor(TOKENS)).logits.numpy()
  assert np.abs(_logits(model, params) - ref).max() < 1e-4
