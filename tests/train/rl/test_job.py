"""The RL binary's edge: SFT hand-off, device split, judge choice."""

import importlib.util

import jax
import numpy as np
import pytest

from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import scoring


def _config(repo_root, arg='tiny'):
  spec = importlib.util.spec_from_file_location(
      'rl_config', repo_root / 'tpu_configs' / 'rl.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def test_split_devices_and_judge(repo_root):
  c = _config(repo_root)
  learner, sampler = job_lib.split_devices(c, 'all')
  assert len(learner) == 4 and len(sampler) == 4
  assert not set(learner) & set(sampler)
  assert isinstance(job_lib.scorer(c), scoring.DeterministicScorer)
  c.learner.devices = 7
  with pytest.raises(job_lib.RLSetupError, match='do not fit'):
    job_lib.split_devices(c, 'all')
  c.judge.kind = 'oracle'
  with pytest.raises(job_lib.RLSetupError, match='judge.kind'):
    job_lib.scorer(c)


def test_served_rollouts_leave_the_sampler_no_devices(repo_root, monkeypatch):
  c = _config(repo_root)
  c.rollout.policy = 'server'
  learner, sampler = job_lib.split_devices(c, 'all')
  assert len(learner) == c.learner.devices == 4 and sampler == []
  c.learner.devices = 0  # unset: half of the 8 host devices
  learner, sampler = job_lib.split_devices(c, 'all')
  assert len(learner) == 4 and sampler == []
  # One accelerator: the learner takes it (half of one would be none).
  monkeypatch.setattr(jax, 'devices', lambda: jax.local_devices()[:1])
  learner, sampler = job_lib.split_devices(c, 'all')
  assert len(learner) == 1 and sampler == []
  c.learner.devices = 2
  with pytest.raises(job_lib.RLSetupError, match='does not fit the 1 devices'):
    job_lib.split_devices(c, 'all')


@pytest.mark.maxtext
@pytest.mark.slow
def test_learner_starts_from_an_sft_checkpoint(repo_root, tmp_path):
  """--config.init.sft_workdir=DIR: the SFT run's latest params."""
  c = _config(repo_root)
  devices = jax.devices()[:1]
  model = job_lib.learner_model(c, devices)
  trained = jax.tree.map(lambda x: x + 1.0, model.params)
  ckpt = checkpoint_lib.Checkpointer(
      tmp_path / 'sft' / 'checkpoints', checkpoint_lib.CheckpointConfig()
  )
  ckpt.save(7, {'params': trained, 'opt_state': {}}, {'position': 0})
  ckpt.close()
  c.init.sft_workdir = str(tmp_path / 'sft')
  got = job_lib.learner_model(c, devices)
  jax.tree.map(np.testing.assert_array_equal, got.params, trained)


def test_injected_latency_is_stratified_over_the_task_pool(repo_root):
  c = _config(repo_root)
  assert job_lib.worker_config(c).latency_strata == ()  # no latency: no pool
  c.rollout.latency_median_s, c.rollout.latency_p99_s = 25.0, 97.0
  ids = job_lib.worker_config(c).latency_strata
  assert len(ids) == 40 and set(ids) == {t.id for t in job_lib.load_tasks(c)}
