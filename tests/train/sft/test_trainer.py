"""SFT trainer: resume after a kill, validation, metrics; the binary's pulse."""

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file

from search_agent.model import families
from search_agent.model import hf_import
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import metrics as metrics_lib
from search_agent.train.sft import step as step_lib
from search_agent.train.sft import trainer

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


ONE = jax.devices()[:1]


class Killed(Exception):
  pass


def _cfg(sft_jsonl, tokenizer_dir):
  model = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=512, logits_chunk=128
  )
  return sft_config.SFTConfig(
      model=model,
      layout=families.layout_preset('fsdp'),
      optimizer=optim.OptimizerConfig(),
      schedule=schedule_lib.ScheduleConfig(
          peak=1e-2, minimum=1e-4, warmup_steps=1, total_steps=4
      ),
      data=data_lib.DataConfig(
          train_path=sft_jsonl,
          val_path=sft_jsonl,
          train_lines=(0, 20),
          val_lines=(20, 24),
          seq_len=512,
          micro_batch=2,
          micro_steps=2,
          num_packing_bins=4,
      ),
      checkpoint=checkpoint_lib.CheckpointConfig(every=2, keep=2),
      tokenizer_path=tokenizer_dir,
      total_updates=4,
      eval_every=2,
  )


def test_resume_after_kill_reproduces_the_loss_curve(
    tmp_path, sft_jsonl, tiny_tokenizer_dir
):
  cfg = _cfg(sft_jsonl, tiny_tokenizer_dir)
  straight = tmp_path / 'straight'
  trainer.train(cfg, str(straight), devices=ONE)

  def kill_at_3(step, _):
    if step == 3:  # after update 3, whose checkpoint was never written
      raise Killed

  resumed = tmp_path / 'resumed'
  with pytest.raises(Killed):
    trainer.train(cfg, str(resumed), on_update=kill_at_3, devices=ONE)
  trainer.train(cfg, str(resumed), devices=ONE)

  want = metrics_lib.read_metrics(str(straight / 'metrics.jsonl'))
  rows = metrics_lib.read_metrics(str(resumed / 'metrics.jsonl'))
  # Update 3 ran twice; the resume rolled its first record back.
  assert [r['step'] for r in rows] == [1, 2, 3, 4]
  got = {r['step']: r for r in rows}
  assert [r['step'] for r in want] == [1, 2, 3, 4]
  resumed_val = metrics_lib.read_metrics(str(resumed / 'metrics.jsonl'), 'val')
  assert [r['step'] for r in resumed_val] == [2, 4]
  curve = [r['nll'] for r in want]
  print('\nloss curve', curve)
  np.testing.assert_allclose(
      [got[s]['nll'] for s in range(1, 5)], curve, rtol=1e-6
  )
  assert [got[s]['tokens'] for s in range(1, 5)] == [r['tokens'] for r in want]
  assert curve[-1] < curve[0]
  val = metrics_lib.read_metrics(str(straight / 'metrics.jsonl'), 'val')
  assert [r['step'] for r in val] == [2, 4]
  assert val[-1]['nll'] < np.log(4096)
  assert os.listdir(straight / 'tb')


def test_binary_pulse(tmp_path, repo_root, sft_jsonl, tiny_tokenizer_dir):
  env = dict(os.environ)
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=1'
  env['JAX_PLATFORMS'] = 'cpu'
  cmd = [
      sys.executable,
      '-m',
      'search_agent.train.sft',
      f'--config={repo_root}/tpu_configs/sft.py:tiny',
      f'--workdir={tmp_path}',
      '--config.total_updates=2',
      f'--config.data.train_path={sft_jsonl}',
      f'--config.data.val_path={sft_jsonl}',
      '--config.data.format=trajectory',
      '--config.data.train_lines=(0, 20)',
      '--config.data.val_lines=(20, 24)',
      '--config.data.seq_len=512',
      '--config.model.max_target_length=512',
      '--config.model.logits_chunk=128',
      f'--config.tokenizer_path={tiny_tokenizer_dir}',
  ]
  proc = subprocess.run(
      cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=600
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  rows = metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'))
  assert [r['step'] for r in rows] == [1, 2]
  assert all(np.isfinite(r['nll']) for r in rows)
  # TensorBoard/JSONL scalars: the schedule's lr of each update, MFU.
  spec = importlib.util.spec_from_file_location(
      'sft_cfg', repo_root / 'tpu_configs' / 'sft.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  tiny = sft_config.from_config_dict(mod.get_config('tiny'))
  schedule = schedule_lib.make_schedule(tiny.schedule)
  for r in rows:
    assert r['learning_rate'] == pytest.approx(float(schedule(r['step'] - 1)))
    assert r['model_flops_per_s'] > 0 and 0 < r['mfu'] < 1
  assert metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'), 'val')
  assert (tmp_path / 'checkpoints' / '2').is_dir()
  [data] = metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'), 'data')
  assert data['step'] == 0 and 0 < data['supervised_token_coverage'] <= 1
  report = json.loads((tmp_path / 'data_report.json').read_text())
  assert report['train']['supervised_token_coverage'] == pytest.approx(
      data['supervised_token_coverage']
  )


def test_tiny_and_recipe_configs_convert(repo_root):
  from ml_collections import config_flags  # pylint: disable=g-import-not-at-top

  del config_flags
  import importlib.util  # pylint: disable=g-import-not-at-top

  spec = importlib.util.spec_from_file_location(
      'sft_cfg', repo_root / 'tpu_configs' / 'sft.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  recipe = sft_config.from_config_dict(mod.get_config('recipe'))
  assert recipe.optimizer.name == 'muon'
  assert (recipe.optimizer.momentum, recipe.optimizer.spectral_scale) == (
      0.9,
      0.2,
  )
  assert not recipe.optimizer.nesterov and recipe.optimizer.weight_decay == 0.1
  assert (recipe.schedule.peak, recipe.schedule.minimum) == (5e-5, 1e-6)
  assert (recipe.schedule.warmup_steps, recipe.schedule.total_steps) == (
      51,
      507,
  )
  assert recipe.total_updates == 507
  # 64 packed rows an update, 8 a microbatch: one per slot of the 8-way
  # batch axis (expert=8), each slot its own loader stream.
  d = recipe.data
  assert (d.micro_batch, d.micro_steps, d.shards) == (8, 8, 8)
  assert recipe.data.seq_len == 262144 and recipe.model.remat_policy == 'full'
  assert recipe.layout.sizes(128) == {
      'data': 1,
      'fsdp': 1,
      'expert': 8,
      'tensor': 2,
      'context': 8,
  }
  tiny = sft_config.from_config_dict(mod.get_config('tiny'))
  assert tiny.model.decoder_block == 'mixtral' and tiny.model.supports_replay


def test_starts_from_imported_hf_parameters(tmp_path, repo_root, sft_jsonl):
  """load_parameters_path: the run starts from an imported HF checkpoint."""
  hf_dir = str(repo_root / 'tests' / 'fixtures' / 'hf_tiny')
  base = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=512, logits_chunk=128
  )
  model = hf_import.model_config_for_hf(hf_dir, base)
  path = hf_import.convert_in_subprocess(hf_dir, str(tmp_path / 'mt'), model)
  cfg = dataclasses.replace(
      _cfg(sft_jsonl, ''),
      model=dataclasses.replace(model, load_parameters_path=path),
      tokenizer_path='',
      tokenizer_corpus=str(
          repo_root.parent
          / 'shared'
          / 'data'
          / 'corpus'
          / '2wikimultihopqa_corpus.json'
      ),
  )
  run = trainer._Run(cfg, str(tmp_path / 'work'), ONE)  # pylint: disable=protected-access
  want = load_file(f'{hf_dir}/model.safetensors')['model.embed_tokens.weight']
  np.testing.assert_array_equal(
      run.model.params['token_embedder']['embedding'], want
  )


def test_a_microbatch_the_batch_axes_cannot_split_is_refused():
  """The recipe's old micro_batch=1 against an 8-way batch axis: a clear
  error before any batch is placed (jax would raise IndivisibleError)."""
  devices = np.array(jax.devices()[:8]).reshape(1, 2, 4)
  mesh = jax.sharding.Mesh(devices, ('data', 'fsdp', 'expert'))
  sharding = jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec(None, ('data', 'fsdp', 'expert'))
  )
  step_lib.check_batch(sharding, 8)
  step_lib.check_batch(sharding, 16)
  with pytest.raises(step_lib.BatchLayoutError, match='multiple of 8'):
    step_lib.check_batch(sharding, 1)
