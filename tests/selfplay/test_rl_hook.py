"""The RL hook: config variants, the seed pool, group splitting, metrics."""

import asyncio
import json

from ml_collections import config_flags  # pylint: disable=unused-import
import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.selfplay import toolbox
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import config as config_lib
from search_agent.train.rl import learner
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import selfplay
from tpu_configs import rl as rl_config


def test_variants_compose():
  c = rl_config.get_config('searchmaster,tiny')
  assert selfplay.enabled(c) and c.selfplay.verifier.kind == 'programmatic'
  assert (c.selfplay.k_proposer, c.selfplay.k_solver) == (2, 2)
  assert list(c.search.tools) == ['search', 'open', 'find']
  assert config_lib.loss_config(c).objective == 'grpo_clip'
  full = rl_config.get_config('searchmaster')
  sp = selfplay.selfplay_config(full)
  assert (sp.k_proposer, sp.k_solver, sp.ecg, sp.difficulty, sp.oop,
          sp.seed_gate) == (8, 8, True, 'sdr', True, True)  # fmt: skip
  assert full.selfplay.solver_max_steps == 200
  assert full.scheduler.groups_per_update == 64
  assert full.selfplay.verifier.kind == 'frozen'  # the seed's
  for arg in ('tiny', 'partial,tiny', None):
    assert not selfplay.enabled(rl_config.get_config(arg))


def test_llm_verifier_from_config():
  c = rl_config.get_config('searchmaster,tiny')
  c.selfplay.verifier.kind = 'llm'
  c.selfplay.verifier.llm = dict(kind='scripted', name='v',
                                 script=['{"valid": true}'])  # fmt: skip
  v = selfplay.build_verifier(c)
  assert v.manifest == {'name': 'llm', 'model': 'v'}
  assert selfplay.judge_manifest(c)['llm']['kind'] == 'scripted'
  c.selfplay.verifier.kind = 'oracle'
  with pytest.raises(ValueError, match='programmatic'):
    selfplay.build_verifier(c)


def test_frozen_verifier_from_config():
  c = rl_config.get_config('searchmaster,tiny')
  c.selfplay.verifier.kind = 'frozen'
  assert selfplay.judge_manifest(c)['name'] == 'frozen'
  with pytest.raises(ValueError, match='rollout worker'):
    selfplay.build_verifier(c)  # needs the worker's devices and tokenizer


def test_prepare_writes_the_seed_pool(tmp_path):
  c = rl_config.get_config('searchmaster,tiny')
  out = selfplay.prepare(c, str(tmp_path))
  seeds = list(task_lib.iter_tasks(out.tasks_path))
  assert len(seeds) == c.selfplay.num_seeds
  assert all(s.id.startswith('seed:') and len(s.question) >= 200
             for s in seeds)  # fmt: skip
  again = selfplay.prepare(c, str(tmp_path))  # reused, not resampled
  assert list(task_lib.iter_tasks(again.tasks_path)) == seeds
  assert selfplay.prepare(rl_config.get_config('tiny'), 'x').tasks_path == (
      rl_config.get_config('tiny').tasks_path
  )


def _traj(i, reward):
  tok = traj_lib.TokenRecord(token_ids=(1, 2), loss_mask=(0, 1),
                             logprobs=(0.0, -1.0), versions=(-1, 0))  # fmt: skip
  return rollout_groups.ScoredTrajectory(trajectory_id=f't{i}', segments=(tok,),
                                  reward=reward)  # fmt: skip


def test_split_group_and_metrics():
  trajs = tuple(_traj(i, r) for i, r in enumerate([0.0, 0.5, 1.0]))
  g = rollout_groups.RolloutGroup(
      group_id='g', task_id='s', dispatch_batch=0, trajectories=trajs,
      meta={'selfplay': {'split': [2, 1]}},
  )  # fmt: skip
  g = rollout_groups.RolloutGroup.from_json(json.loads(json.dumps(g.to_json())))
  (prop,) = selfplay.split_group(g)  # a 1-rollout solver group is no group
  assert prop.group_id == 'g/proposer' and prop.rewards == (0.0, 0.5)
  g2 = rollout_groups.RolloutGroup(
      group_id='h',
      task_id='s',
      dispatch_batch=0,
      trajectories=trajs,
      meta={'selfplay': {'split': [1, 2]}},
  )
  assert [p.rewards for p in selfplay.split_group(g2)] == [(0.5, 1.0)]
  empty = rollout_groups.RolloutGroup(
      group_id='f',
      task_id='s',
      dispatch_batch=0,
      trajectories=(),
      meta={'failed': True},
  )
  assert selfplay.split_group(empty) == []

  class Sink:
    rows = []

    def write(self, rec):
      self.rows.append(rec)

  m = selfplay._SelfPlayMetrics(Sink())  # pylint: disable=protected-access
  m.write({'update': 1})
  assert m.inner.rows[0]['seeds'] == 0
  assert m.inner.rows[0]['solver_reward_mean'] is None


def test_curves(tmp_path):
  from search_agent.selfplay import plots  # pylint: disable=g-import-not-at-top

  rows = [
      {
          'update': 1,
          'seeds_retained': 0.5,
          'h_min_mean': None,
          'open_search_ratio': {'proposer': 1.0, 'solver': None},
      },
      {
          'update': 2,
          'seeds_retained': 1.0,
          'h_min_mean': 3.0,
          'open_search_ratio': {'proposer': 0.5, 'solver': 2.0},
          'proposer_reward_mean': 0.3,
          'solver_reward_mean': 0.5,
      },
  ]
  path = tmp_path / 'metrics.jsonl'
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
  plots.plot(str(path), str(tmp_path / plots.PLOT))
  assert (tmp_path / plots.PLOT).stat().st_size > 0


def test_each_role_is_its_own_grpo_group():

  rewards = [0.0, 0.2, 0.4, 1.0, 1.0, 0.0]  # 3 proposer, 3 solver rollouts
  g = rollout_groups.RolloutGroup(
      group_id='g', task_id='s', dispatch_batch=0,
      trajectories=tuple(_traj(i, r) for i, r in enumerate(rewards)),
      meta={'selfplay': {'split': [3, 3]}},
  )  # fmt: skip
  cfg = adv_lib.AdvantageConfig(normalize_std=True)
  (mb,) = learner.pack_update(
      selfplay.split_group(g), seq_len=4, batch_size=6, adv_cfg=cfg
  )
  adv = mb.batch.advantages_b
  for part in (adv[:3], adv[3:]):  # mean 0, std 1 within each role
    assert abs(part.mean()) < 1e-6 and abs(part.std() - 1.0) < 1e-4
  assert adv[0] < adv[1] < adv[2] and adv[3] == adv[4] > adv[5]


def test_role_signal_counts_each_role_apart():
  def group(gid, split, rewards):
    return rollout_groups.RolloutGroup(
        group_id=gid, task_id='s', dispatch_batch=0,
        trajectories=tuple(_traj(i, r) for i, r in enumerate(rewards)),
        meta={'selfplay': {'split': split}},
    )  # fmt: skip

  groups = [
      group('a', [2, 2], [0.0, 0.2, 1.0, 0.0]),  # both roles differ
      group('b', [2, 2], [0.2, 0.2, 0.0, 1.0]),  # only the solvers
      group('c', [3, 0], [0.0, 0.0, 0.0]),  # no solver group, no signal
  ]
  parts = [p for g in groups for p in selfplay.split_group(g)]
  cfg = adv_lib.AdvantageConfig(normalize_std=True)
  assert selfplay.role_signal(parts, cfg) == {
      'role_groups': {'proposer': 3, 'solver': 2},
      'role_groups_with_advantage': {'proposer': 1, 'solver': 2},
  }

  class Sink:
    rows = []

    def write(self, rec):
      self.rows.append(rec)

  m = selfplay._SelfPlayMetrics(Sink())  # pylint: disable=protected-access
  m.roles = selfplay.role_signal(parts, cfg)
  m.write({'update': 1})
  m.write({'update': 2})  # counts are per update
  first, second = m.inner.rows
  assert first['role_groups_with_advantage'] == {'proposer': 1, 'solver': 2}
  assert 'role_groups' not in second


def test_searchmaster_tiny_warm_starts_from_the_selfplay_policy():
  c = rl_config.get_config('searchmaster,tiny,warm')
  assert selfplay.enabled(c) and c.init.sft_workdir.endswith(
      'tiny_selfplay_policy'
  )
  assert c.selfplay.seeds_path.endswith('tiny_selfplay_policy/seeds.jsonl')
  assert list(c.search.tools) == ['search', 'open']
  assert c.selfplay.verifier.kind == 'programmatic'
  assert c.rollout.tool_text == 'signature'
  assert c.model.dims.base_num_decoder_layers == 4
  assert c.sampler.max_prompt_len + c.sampler.max_new_tokens <= (
      c.model.max_target_length
  )
  with pytest.raises(ValueError, match='warm is a tiny variant'):
    rl_config.get_config('searchmaster,warm')


def test_partial_rollouts_are_refused():
  c = rl_config.get_config('searchmaster,tiny')
  c.rollout.partial = True
  with pytest.raises(ValueError, match='partial'):
    selfplay.worker_factory(c, '/tmp/unused', None)


def test_tool_call_budget(toolbox_factory):

  box = toolbox.CappedToolbox(toolbox_factory(), max_calls=2)
  call = traj_lib.ToolCall(name='search', arguments={'query': ['Teutberga']})
  texts = [asyncio.run(box.execute(call)).text for _ in range(3)]
  assert 'Teutberga' in texts[0] and 'Teutberga' in texts[1]
  assert 'budget of this rollout (2 calls)' in texts[2]
  assert box.schemas() == toolbox_factory().schemas() and box.calls == 2
