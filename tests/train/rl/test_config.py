"""tpu_configs/rl.py converts to the library's dataclasses."""

import importlib.util
import os

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import outcome
from search_agent.train.rl import config as config_lib
from search_agent.train.rl import rollout_groups


def _load(repo_root, arg=None):
  spec = importlib.util.spec_from_file_location(
      'rl_config', repo_root / 'tpu_configs' / 'rl.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def test_recipe_values(repo_root):
  c = _load(repo_root)
  loss = config_lib.loss_config(c)
  assert (loss.icepop_low, loss.icepop_high, loss.max_token_age) == (0.2, 5, 8)
  assert loss.objective == 'icepop'
  s = config_lib.scheduler_config(c)
  assert (s.groups_per_update, s.start_after_ready, s.admission_window) == (
      32,
      8,
      8,
  )
  v = config_lib.claim_voting(c)
  assert (
      v.select_calls,
      v.select_min_votes,
      v.judge_calls,
      v.judge_min_votes,
  ) == (5, 3, 7, 5)
  w = config_lib.reward_weights(c)
  assert (w.correct, w.coverage) == (0.6, 0.4)
  assert not config_lib.advantage_config(c).normalize_std
  sim = config_lib.sim_config(c)
  assert sim.cluster.generation_nodes == 7 and sim.cluster.training_nodes == 10


def test_tiny_and_errors(repo_root):
  c = _load(repo_root, 'tiny')
  assert config_lib.scheduler_config(c).groups_per_update == 4
  c.loss.objective = 'ppo'
  with pytest.raises(ValueError, match='objective'):
    config_lib.loss_config(c)
  with pytest.raises(ValueError, match='variant'):
    _load(repo_root, 'huge')


def test_searchmaster_variant(repo_root):
  c = _load(repo_root, 'searchmaster,tiny')
  loss = config_lib.loss_config(c)
  assert loss.objective == 'grpo_clip' and loss.kl_coef == 0.001
  assert (loss.clip_low, loss.clip_high) == (0.2, 0.28)
  assert config_lib.advantage_config(c).normalize_std
  sm = config_lib.searchmaster_rewards(c)
  assert (
      sm.r0,
      sm.depth_horizon,
      sm.oop_alpha,
      sm.oop_beta,
      sm.oop_lambda,
  ) == (0.2, 10, 1.5, 2.5, 0.5)
  assert c.group_size == 8
  assert config_lib.scheduler_config(c).groups_per_update == 4


def test_scored_needs_tokens():
  traj = traj_lib.Trajectory(id='r', task_id='t', question='q', messages=())
  reward = outcome.RolloutReward(correct=1.0, coverage=0.5, total=0.8)
  with pytest.raises(rollout_groups.GroupFormatError, match='no tokens'):
    rollout_groups.scored(traj, reward)
  tok = traj_lib.TokenRecord(
      token_ids=(1,), loss_mask=(1,), logprobs=(-1.0,), versions=(3,)
  )
  s = rollout_groups.scored(
      traj_lib.Trajectory(
          id='r', task_id='t', question='q', messages=(), tokens=tok
      ),
      reward,
  )
  assert (s.reward, s.correct, s.coverage, s.segments) == (
      0.8,
      1.0,
      0.5,
      (tok,),
  )
  assert not s.slid


def test_warm_variant_starts_from_the_shipped_sft_policy(repo_root):
  c = _load(repo_root, 'tiny,warm')
  assert c.learner.dynamic_sampling
  assert c.init.sft_workdir.endswith('tiny_sft_policy')
  assert c.model.dims.base_num_decoder_layers == 4
  assert os.path.exists(c.tasks_path)
  for bad in ('warm', 'tiny,long,warm'):
    with pytest.raises(ValueError, match='warm'):
      _load(repo_root, bad)
