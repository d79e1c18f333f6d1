"""The pipeline driver: stages as real binaries, reuse by hash, the report."""

import json
import os
import pathlib
import re
import sys

from absl import flags
from ml_collections import config_flags
import pytest

from search_agent.pipeline import environment
from search_agent.pipeline import families
from search_agent.pipeline import figures
from search_agent.pipeline import plan
from search_agent.pipeline import report
from search_agent.pipeline import report_md
from search_agent.pipeline import runner
from search_agent.pipeline import stages as stages_lib
from search_agent.search import schemas as tool_schemas
from search_agent.train.rl import job as rl_job
from search_agent.train.rl import local_servers
from tpu_configs import eval as eval_config
from tpu_configs import filtering as filtering_config
from tpu_configs import pipeline as pipeline_config
from tpu_configs import rl as rl_config
from tpu_configs import sft as sft_config

REPO = pathlib.Path(__file__).resolve().parents[2]
Stage = stages_lib.Stage
FRONT = ('index', 'tasks', 'tokenizer', 'collect', 'filter', 'split')


def _config(**stage_args):
  c = pipeline_config.get_config('tiny')
  c.stages = FRONT
  c.base.path = ''  # train the small tokenizer below, not the shipped one
  c.model.dims = ()  # the 2-layer model: quicker than the base's 4 layers
  c.tasks.max_train = 12
  c.tokenizer.vocab_size = 1024
  c.split.min_val = 2
  for key, value in stage_args.items():
    section, field = key.split('__')
    c[section][field] = value
  return c


def test_placeholders_are_inputs_and_paths(tmp_path):
  s = Stage(
      name='sft',
      module='m',
      overrides={'data.train_path': '{split}/train.jsonl', 'x': (0, 0)},
      flags={'tok': '{tokenizer}', 'out': '{dir}/x'},
  )
  assert s.inputs() == ('split', 'tokenizer')
  argv = s.argv('py', str(tmp_path))
  assert f'--config.data.train_path={tmp_path}/split/train.jsonl' in argv
  assert '--config.x=(0, 0)' in argv
  assert f'--out={tmp_path}/x' in argv
  assert argv[-1] == f'--workdir={tmp_path}/sft'


def test_hash_follows_settings_and_inputs_not_the_run_dir():
  s = Stage(name='a', module='m', flags={'n': 1, 'in': '{b}'})
  h = stages_lib.stage_hash(s, {'b': 'x'})
  assert h == stages_lib.stage_hash(s, {'b': 'x'})
  assert h != stages_lib.stage_hash(s, {'b': 'y'})
  other = Stage(name='a', module='m', flags={'n': 2, 'in': '{b}'})
  assert h != stages_lib.stage_hash(other, {'b': 'x'})


def test_order_is_checked():
  with pytest.raises(stages_lib.StageError, match='do not run before it'):
    stages_lib.check_order([Stage(name='a', module='m', flags={'x': '{b}'})])


def test_a_missing_module_stops_the_run_before_any_stage(tmp_path):
  c = pipeline_config.get_config('tiny')
  c.stages = ('index', 'tasks')
  missing = Stage(name='later', module='search_agent.no_such_module')
  with pytest.raises(stages_lib.StageError, match='no_such_module'):
    runner.run(plan.build(c) + [missing], str(tmp_path), console=print)
  assert not os.path.exists(tmp_path / 'index')


def test_a_missing_config_variant_is_named(tmp_path):
  s = Stage(name='p', module='search_agent.train.sft',
            config='tpu_configs/sft.py:no_such_variant')  # fmt: skip
  with pytest.raises(stages_lib.StageError, match='no_such_variant'):
    runner.run([s], str(tmp_path), console=lambda _: None)


@pytest.mark.slow
def test_front_stages_run_then_reuse_then_rerun_downstream(tmp_path):
  lines = []
  first = runner.run(plan.build(_config()), str(tmp_path), console=lines.append)
  assert [r.name for r in first] == list(FRONT)
  assert not any(r.reused for r in first)
  assert len(lines) == len(FRONT)
  recorded = json.loads((tmp_path / 'stages.json').read_text())
  assert {r['status'] for r in recorded.values()} == {'done'}
  trajs = (tmp_path / 'collect' / 'trajectories.jsonl').read_text()
  assert len(trajs.splitlines()) == 12 * 3
  tasks = (tmp_path / 'tasks' / 'tasks.train.jsonl').read_text().splitlines()
  task_ids = [json.loads(l)['id'] for l in tasks[:12]]  # collect's limit
  # In task order, whichever rollout finished first (filtering keeps firsts).
  assert [json.loads(l)['id'] for l in trajs.splitlines()] == [
      f'{t}#{k}' for t in task_ids for k in range(3)
  ]
  split = json.loads((tmp_path / 'split' / 'split.json').read_text())
  assert split['train'] > 0 and split['val'] >= 2

  again = runner.run(plan.build(_config()), str(tmp_path), console=lines.append)
  assert all(r.reused for r in again)
  report = Stage(name='report', module='search_agent.pipeline.split',
                 flags={'input': '{dir}/filter/filtered.jsonl'}, always=True)  # fmt: skip
  twice = [runner.run([report], str(tmp_path), console=print)[0] for _ in '12']
  assert not any(r.reused for r in twice)  # an `always` stage always runs

  changed = runner.run(
      plan.build(_config(teacher__rollouts=2)),
      str(tmp_path),
      console=lines.append,
  )
  reran = [r.name for r in changed if not r.reused]
  assert reran == ['collect', 'filter', 'split']
  trajs = (tmp_path / 'collect' / 'trajectories.jsonl').read_text()
  assert len(trajs.splitlines()) == 12 * 2


def test_a_failing_stage_is_recorded_and_raises(tmp_path):
  s = Stage(name='bad', module='search_agent.pipeline.split',
            flags={'input': '{dir}/missing.jsonl'})  # fmt: skip
  with pytest.raises(stages_lib.StageError, match='exited with'):
    runner.run([s], str(tmp_path), python=sys.executable, console=print)
  rec = json.loads((tmp_path / 'stages.json').read_text())['bad']
  assert rec['status'] == 'failed'
  assert os.path.exists(rec['log'])


def _fake_eval(d, correct):
  d.mkdir()
  with open(d / 'results.jsonl', 'w') as f:
    for i, ok in enumerate(correct):
      f.write(json.dumps({'task_id': f't{i}', 'correct': ok,
                          'n_tool_calls': 1 + ok,
                          'tool_calls_by_name': {'search': 1, 'visit': int(ok)},
                          'status': 'answered' if ok else 'max_steps'})
              + '\n')  # fmt: skip


def test_report_holds_the_contract_fields(tmp_path):
  _fake_eval(tmp_path / 'e0', [False] * 10)
  _fake_eval(tmp_path / 'e1', [True] * 4 + [False] * 6)
  (tmp_path / 'stages.json').write_text(json.dumps({
      'e0': {'seconds': 3.0, 'hash': 'h0', 'argv': [], 'figure': '',
             'reused': False, 'log': ''},
      'e1': {'seconds': 5.0, 'hash': 'h1', 'argv': [], 'figure': '',
             'reused': False, 'log': ''},
      # An earlier run's report stage: this report replaces it.
      'report': {'seconds': 2.0, 'hash': 'h2', 'argv': [],
                 'figure': 'wrote /elsewhere/report.md', 'reused': False,
                 'log': ''},
  }))  # fmt: skip
  rep = report.build(
      str(tmp_path), [('before_sft', 'e0'), ('after_sft', 'e1')], 't'
  )
  p = rep['pass_at_1']['after_sft']
  assert (p['n'], p['value']) == (10, 0.4)
  assert p['ci_low'] < 0.4 < p['ci_high']
  assert rep['stages'] == {'e0': 3.0, 'e1': 5.0}
  assert set(rep['manifest']['stages']) == {'e0', 'e1'}
  assert rep['paired']['after_sft_vs_before_sft']['gained'] == 4
  assert rep['tool_calls']['after_sft']['histogram'] == {'1': 6, '2': 4}
  assert rep['tool_calls']['after_sft']['calling'] == {'search': 10, 'visit': 4}
  assert rep['tool_calls']['after_sft']['endings'] == {
      'answered': 4,
      'max_steps': 6,
  }
  assert rep['tool_calls']['before_sft']['calling'] == {
      'search': 10,
      'visit': 0,
  }
  text = report_md.render(rep, str(tmp_path))
  assert (
      "trajectories calling each tool {'search': 10, 'visit': 4}; ended"
      " {'answered': 4, 'max_steps': 6}" in text
  )


def test_report_pairs_sft_and_rl_on_the_tasks_rl_trained_on(tmp_path):
  _fake_eval(tmp_path / 'e0', [False] * 10)
  _fake_eval(tmp_path / 's', [True] * 2 + [False] * 8)
  _fake_eval(tmp_path / 'r', [False] + [True] * 6 + [False] * 3)
  (tmp_path / 'stages.json').write_text('{}')
  rep = report.build(str(tmp_path), [('before_sft', 'e0')], 't', ('s', 'r'))
  seen = rep['rl_seen']
  assert (seen['sft']['value'], seen['rl']['value']) == (0.2, 0.6)
  assert (seen['paired']['gained'], seen['paired']['lost']) == (5, 1)
  assert seen['sft']['stage'] == 's'
  assert 'rl_seen' not in report.build(str(tmp_path), [], 't')
  text = report_md.render(rep, str(tmp_path))
  assert 'the 10 tasks RL trained on: after SFT 20.0%, after RL 60.0%' in text
  assert "How far RL's gain reaches" not in text  # no reach sets


def test_report_pairs_sft_and_rl_on_each_reach_set(tmp_path):
  _fake_eval(tmp_path / 'h0', [True] * 3 + [False] * 7)
  _fake_eval(tmp_path / 'h1', [True] * 4 + [False] * 6)
  _fake_eval(tmp_path / 's', [True] * 2 + [False] * 8)
  _fake_eval(tmp_path / 'r', [False] + [True] * 6 + [False] * 3)
  _fake_eval(tmp_path / 'sib_s', [False] * 10)
  _fake_eval(tmp_path / 'sib_r', [True] * 3 + [False] * 7)
  (tmp_path / 'stages.json').write_text('{}')
  rep = report.build(
      str(tmp_path), [('after_sft', 'h0'), ('after_rl', 'h1')], 't',
      ('s', 'r'), [('siblings', 'sib_s', 'sib_r')],
  )  # fmt: skip
  sib = rep['rl_reach']['siblings']
  assert (sib['sft']['value'], sib['rl']['value']) == (0.0, 0.3)
  assert (sib['paired']['gained'], sib['paired']['lost']) == (3, 0)
  text = report_md.render(rep, str(tmp_path))
  at = text.index("How far RL's gain reaches")
  rows = [l for l in text[at:].splitlines() if l.startswith('| ')][1:]
  assert rows[0].startswith('| the questions RL trained on | 10 | 20.0% |')
  assert rows[1].startswith(
      '| other questions about their pages | 10 | 0.0% | 30.0% | 3 / 0 |'
  )
  assert rows[2].startswith('| held-out pages | 10 | 30.0% | 40.0% | 1 / 0 |')


@pytest.mark.slow
def test_model_stages_pulse_into_the_report(tmp_path, monkeypatch):
  """Teacher demos -> SFT (2 updates) -> eval.run in process -> report."""
  # The stage binaries run on the one CPU device, as in the main job, not
  # on the 8 simulated devices conftest gives this process.
  monkeypatch.delenv('XLA_FLAGS', raising=False)
  c = _config(sft__updates=2, sft__warmup=1, sft__eval_every=2, eval__questions=2,
              eval__max_new_tokens=8, eval__max_steps=2, eval__batch_size=2)  # fmt: skip
  c.stages = FRONT + ('sft', 'eval_after_sft', 'report')
  records = runner.run(plan.build(c), str(tmp_path), console=print)
  assert [r.name for r in records][-3:] == ['sft', 'eval_after_sft', 'report']
  rep = json.loads((tmp_path / 'report.json').read_text())
  p = rep['pass_at_1']['after_sft']
  assert p['n'] == 2 and 0.0 <= p['ci_low'] <= p['value'] <= p['ci_high']
  assert set(rep['stages']) >= {'sft', 'eval_after_sft', 'collect'}
  assert rep['curves']['sft']['train'][-1][0] == 2
  assert (tmp_path / 'report.md').read_text().startswith('# Pipeline report')
  assert os.path.exists(rep['plots']['stages'])


def test_one_environment_for_every_stage(tmp_path):
  """Collection, evals and RL get the `env` section, each in its own
  spelling; the plan never executes the RL config to decide it."""
  c = pipeline_config.get_config('tiny')
  c.env.tools = ('search', 'visit')
  c.env.snippet_words = 30
  broken = tmp_path / 'rl_cfg.py'
  broken.write_text("raise RuntimeError('executed')\n'tiny'\n")
  c.rl.config = f'{broken}:tiny'
  env = plan.env_of(c)
  assert (env.tools, env.snippet_words, env.tool_text) == (
      ('search', 'visit'),
      30,
      'signature',
  )
  stages = {s.name: s for s in plan.build(c)}
  collect = stages['collect'].flags
  assert (collect['tools'], collect['snippet_words']) == ('search,visit', 30)
  assert collect['tool_text'] == 'signature'
  for name in ('eval_before_sft', 'eval_after_sft', 'eval_after_rl'):
    o = stages[name].overrides
    assert o['search.tools'] == env.tools and o['tool_text'] == 'signature'
    assert o['search.snippet_words'] == 30
  o = stages['rl'].overrides
  assert (
      o['search.tools'] == env.tools and o['rollout.tool_text'] == 'signature'
  )
  assert o['search.snippet_words'] == 30
  assert o['rollout.system_prompt'] == env.system_prompt


def test_each_binary_takes_the_environment_where_its_config_holds_it():
  """environment.SPELLINGS names, per binary, keys its config (or, for
  collect, its flags) has; the plan hands the env to those binaries."""
  env = environment.Environment(index_dir='I', keep_observations=1)
  configs = {
      plan.EVAL: eval_config.get_config('tiny'),
      plan.RL: rl_config.get_config('tiny'),
      plan.SFT: sft_config.get_config('tiny'),
      plan.FILTER: filtering_config.get_config('recipe'),
  }
  for module, config in configs.items():
    for key in env.settings(module):
      node = config
      for part in key.split('.'):
        assert part in node, f'{module} has no {key}'
        node = node[part]
  collect = (REPO / 'search_agent/pipeline/collect.py').read_text()
  for flag in env.settings(plan.COLLECT):
    assert re.search(rf"DEFINE_\w+\(\s*'{flag}'", collect), flag
  c = pipeline_config.get_config('learn')
  c.env.keep_observations = 1
  taking = {
      s.module for s in plan.build(c) if s.module in environment.SPELLINGS
  }
  assert taking == set(environment.SPELLINGS)


def test_the_horizon_slides_in_sft_eval_and_rl_only_when_asked():
  """env.keep_observations: SFT's views, every evaluation and RL slide one
  window; at 0 no stage gets an override (earlier runs stay reusable)."""
  c = pipeline_config.get_config('learn')
  before = {s.name: s.fingerprint() for s in plan.build(c)}
  for stage in plan.build(c):
    keys = {k.rpartition('.')[2] for k in stage.overrides}
    assert not keys & {'keep_observations', 'keep_last_n_observations'}
    assert stage.overrides.get('context.policy', 'none') == 'none'
  c.env.keep_observations = 1
  stages = {s.name: s for s in plan.build(c)}
  sft = stages['sft'].overrides
  assert (sft['context_policy'], sft['keep_last_n_observations']) == (
      'sliding_window',
      1,
  )
  for name in ('eval_before_sft', 'eval_after_sft', 'eval_after_rl'):
    o = stages[name].overrides
    assert (o['context.policy'], o['context.keep_observations']) == (
        'sliding_window',
        1,
    )
  rl = stages['rl'].overrides
  assert (rl['rollout.context_policy'], rl['rollout.keep_observations']) == (
      'sliding_window',
      1,
  )
  assert stages['collect'].fingerprint() == before['collect']
  assert stages['sft'].fingerprint() != before['sft']
  c.env.keep_observations = -1
  with pytest.raises(ValueError, match='keep_observations=-1'):
    plan.build(c)


def test_sft_starts_from_the_pretrain_stage_only_when_it_runs():
  c = pipeline_config.get_config('tiny')
  stages = {s.name: s for s in plan.build(c)}
  assert stages['sft'].overrides['init_from'] == '{pretrain}'
  assert 'pretrain' in stages['sft'].inputs()
  assert stages['eval_before_sft'].overrides['sampler.checkpoint_dir'] == (
      '{pretrain}'
  )
  c.stages = tuple(n for n in c.stages if n != 'pretrain')
  stages = {s.name: s for s in plan.build(c)}
  assert 'init_from' not in stages['sft'].overrides
  assert stages['eval_before_sft'].overrides['sampler.checkpoint_dir'] == ''


def test_sft_rehearses_the_pretraining_texts_only_when_asked():
  c = pipeline_config.get_config('learn')
  assert c.sft.rehearsal == 0.5  # the default of `learn` and `tiny`
  c.sft.rehearsal = 0.0
  sft = {s.name: s for s in plan.build(c)}['sft']
  assert not any(k.startswith('data.rehearsal') for k in sft.overrides)
  c.sft.rehearsal = 0.5
  sft = {s.name: s for s in plan.build(c)}['sft']
  o = sft.overrides
  assert o['data.rehearsal_fraction'] == 0.5
  assert o['data.rehearsal_path'] == plan.BUNDLED_CORPUS
  # The pretraining's mix of corpus documents and synthetic sequences.
  assert o['data.synthetic_fraction'] == c.pretrain.synthetic_fraction
  assert o['data.synthetic_kinds'] == ('shuffle',)
  data = _parsed_config(sft).data  # as train.sft parses the stage's flags
  assert (data.rehearsal_fraction, data.synthetic_fraction) == (0.5, 0.95)


def test_evaluations_are_served_unless_asked_in_process():
  c = pipeline_config.get_config('tiny')
  evals = [s for s in plan.build(c) if s.module == 'eval.run']
  assert len(evals) == 5  # before SFT, after SFT and RL (pages, phrasings)
  assert {s.overrides['policy.kind'] for s in evals} == {'served'}
  # The served model is the sampler section's, with its slots per question.
  e = evals[1].overrides
  assert e['sampler.checkpoint_dir'] == '{sft}'
  assert e['concurrency'] == c.eval.batch_size
  c.eval.policy = 'sampler'
  evals = [s for s in plan.build(c) if s.module == 'eval.run']
  assert {s.overrides['policy.kind'] for s in evals} == {'sampler'}
  c.eval.policy = 'vllm'
  with pytest.raises(plan.PlanError, match="eval.policy 'vllm'"):
    plan.build(c)


def test_name_relation_reaches_the_teacher_only_when_on():
  c = pipeline_config.get_config('tiny')
  c.teacher.name_relation = False
  collect = {s.name: s for s in plan.build(c)}['collect']
  assert 'name_relation' not in collect.flags  # earlier runs' hash kept
  for variant in ('tiny', 'learn'):  # on in both
    c = pipeline_config.get_config(variant)
    collect = {s.name: s for s in plan.build(c)}['collect']
    assert collect.flags['name_relation'] is True
    assert '--name_relation=True' in collect.argv(sys.executable, '/r')


def test_question_query_reaches_the_teacher_only_when_on():
  c = pipeline_config.get_config('learn')
  collect = {s.name: s for s in plan.build(c)}['collect']
  assert 'question_query' not in collect.flags  # earlier runs' hash kept
  c.teacher.question_query = True
  collect = {s.name: s for s in plan.build(c)}['collect']
  assert '--question_query=True' in collect.argv(sys.executable, '/r')


def test_learn_reads_pages_only_when_the_results_lack_the_answer():
  c = pipeline_config.get_config('tiny')
  collect = {s.name: s for s in plan.build(c)}['collect']
  assert 'visit_when' not in collect.flags  # earlier runs' hash kept
  assert '--visit=False' in collect.argv(sys.executable, '/r')
  c = pipeline_config.get_config('learn')
  stages = {s.name: s for s in plan.build(c)}
  argv = stages['collect'].argv(sys.executable, '/r')
  assert '--visit_when=missing' in argv
  assert '--visit=True' in argv and '--tools=search,visit' in argv
  # What the teacher showed, eval and RL offer, with room for the visit.
  for name in ('eval_after_sft', 'rl'):
    text = ' '.join(stages[name].argv(sys.executable, '/r'))
    assert "('search', 'visit')" in text, name
  assert stages['eval_after_sft'].overrides['agent.max_steps'] == 4


def test_rl_sees_the_prompt_and_snippets_eval_sees():
  c = pipeline_config.get_config('tiny')
  c.rl.temperature = 0.7
  env = plan.env_of(c)
  assert (env.tool_text, env.tools) == ('signature', ('search',))
  rl_stage = {s.name: s for s in plan.build(c)}['rl']
  rc = rl_config.get_config('tiny')
  for key, value in rl_stage.overrides.items():
    # Placeholders are paths of other stages; the model sizes are strings
    # the binary's flag parser casts (test_model_sizes_reach_...).
    if '{' not in str(value) and not key.startswith('model.dims.'):
      section, _, field = key.rpartition('.')
      (rc[section] if section else rc)[field] = value
  schemas = tool_schemas.tool_schemas(env.tools)
  assert rl_job.system_text(rc) == env.system_text(schemas)
  assert 'search(query' in rl_job.system_text(rc)
  assert rc.search.snippet_words == env.snippet_words == 24
  assert rc.optimizer.learning_rate == c.rl.learning_rate
  # The RL binary hands the rollouts' temperature to the learner too.
  assert rl_job.loop_config(rc).temperature == 0.7


def test_the_climb_runs_before_the_report_from_rl_to_rl():
  c = pipeline_config.get_config('tiny')
  assert not {'climb_sft', 'climb_rl'} & {s.name for s in plan.build(c)}
  rl_before = {s.name: s for s in plan.build(c)}['rl']
  c.climb.enabled = True
  built = plan.build(c)
  names = [s.name for s in built]
  assert names[-5:] == list(families.CLIMB_STAGES) + ['report']
  stages = {s.name: s for s in built}
  # The RL stage is the same (a finished run is reused when the climb is
  # enabled after it); climb_data selects from its workdir.
  assert stages['rl'] == rl_before
  data = stages['climb_data']
  assert (
      data.flags['rl_workdir'] == '{rl}' and data.flags['min_tool_turns'] == 1
  )
  assert data.flags['demonstrations'] == '{split}/train.jsonl'
  sft = stages['climb_sft'].overrides
  assert sft['init_from'] == '{rl}' and sft['schedule.kind'] == 'constant'
  assert sft['data.train_path'] == '{climb_data}/train.jsonl'
  assert sft['total_updates'] == c.climb.sft_updates
  assert sft['data.val_path'] == stages['sft'].overrides['data.val_path']
  climb_rl = stages['climb_rl'].overrides
  assert climb_rl['init.sft_workdir'] == '{climb_sft}'
  assert climb_rl['max_updates'] == c.climb.rl_updates
  assert stages['eval_after_climb'].overrides['sampler.checkpoint_dir'] == (
      '{climb_rl}'
  )
  assert (
      stages['report']
      .flags['evals']
      .endswith('after_rl:eval_after_rl,after_climb:eval_after_climb')
  )
  c.climb.mix_demonstrations = False
  stages = {s.name: s for s in plan.build(c)}
  assert stages['climb_data'].flags['demonstrations'] == ''


def test_rl_pool_probes_the_sft_policy_on_train_tasks_before_rl():
  c = pipeline_config.get_config('learn')
  stages = {s.name: s for s in plan.build(c)}
  assert not set(families.POOL_STAGES) & set(stages)  # off: as before
  assert stages['rl'].overrides['tasks_path'] == '{tasks}/tasks.train.jsonl'
  c.rl_pool.enabled = True
  names = plan.stage_names(c)
  assert names[names.index('rl') - 2 : names.index('rl')] == [
      'rl_probe',
      'rl_pool',
  ]
  stages = {s.name: s for s in plan.build(c)}
  probe = stages['rl_probe'].overrides
  assert probe['dataset.path'] == '{tasks}/tasks.train.jsonl'
  assert probe['dataset.limit'] == c.rl_pool.probe_tasks
  assert probe['sampler.checkpoint_dir'] == '{sft}'
  assert probe['agent.temperature'] == 0.0  # the eval's greedy decoding
  assert stages['rl_pool'].flags['probe'] == '{rl_probe}'
  assert stages['rl'].overrides['tasks_path'] == '{rl_pool}/tasks.jsonl'
  # Not an evaluation of the report (held-out only).
  assert 'rl_probe' not in stages['report'].flags['evals']
  # The climb's RL draws from the same pool.
  c.climb.enabled = True
  stages = {s.name: s for s in plan.build(c)}
  assert stages['climb_rl'].overrides['tasks_path'] == '{rl_pool}/tasks.jsonl'


def test_rl_draws_from_the_rl_split_when_synthesis_writes_one():
  c = pipeline_config.get_config('learn')
  stages = {s.name: s for s in plan.build(c)}
  assert 'rl_fraction' not in stages['tasks'].overrides  # off: as before
  c.tasks.rl_fraction = 0.1
  c.rl_pool.enabled = c.climb.enabled = True
  stages = {s.name: s for s in plan.build(c)}
  assert stages['tasks'].overrides['rl_fraction'] == 0.1
  assert stages['collect'].flags['tasks'] == '{tasks}/tasks.train.jsonl'
  probe = stages['rl_probe'].overrides['dataset.path']
  assert probe == stages['rl_pool'].flags['tasks'] == '{tasks}/tasks.rl.jsonl'
  c.rl_pool.enabled = False
  stages = {s.name: s for s in plan.build(c)}
  for name in ('rl', 'climb_rl'):
    assert stages[name].overrides['tasks_path'] == '{tasks}/tasks.rl.jsonl'
  held = stages['eval_after_rl'].overrides['dataset.path']
  assert held == '{tasks}/tasks.heldout.jsonl'


def test_learn_checks_rl_on_the_tasks_it_trained_on():
  c = pipeline_config.get_config('tiny')
  assert not set(families.SEEN_STAGES) & set(plan.stage_names(c))
  assert 'rl_seen' not in {s.name: s for s in plan.build(c)}['report'].flags
  c = pipeline_config.get_config('learn')
  names = plan.stage_names(c)
  at = names.index('eval_after_rl')
  assert names[at + 1 : at + 4] == list(families.SEEN_STAGES)
  stages = {s.name: s for s in plan.build(c)}
  assert stages['rl_seen'].flags == {
      'rl': '{rl}',
      'tasks': stages['rl'].overrides['tasks_path'],
      'reach': 240,
  }
  for name, ckpt in (
      ('eval_rl_seen_sft', '{sft}'),
      ('eval_rl_seen_rl', '{rl}'),
  ):
    o = stages[name].overrides
    assert o['dataset.path'] == '{rl_seen}/tasks.jsonl'
    assert o['dataset.limit'] == 0  # every task RL trained on
    assert o['sampler.checkpoint_dir'] == ckpt
    assert o['agent.temperature'] == 0.0
  report_flags = stages['report'].flags
  assert report_flags['rl_seen'] == 'eval_rl_seen_sft,eval_rl_seen_rl'
  assert 'rl_seen' not in report_flags['evals']  # held-out evaluations only
  # How far the gain reaches: both checkpoints on rl_seen's other sets.
  assert names[at + 4 : at + 8] == list(families.REACH_STAGES)
  for s in families.REACH_SETS:
    for model, ckpt in (('sft', '{sft}'), ('rl', '{rl}')):
      o = stages[f'eval_rl_{s}_{model}'].overrides
      assert o['dataset.path'] == f'{{rl_seen}}/{s}.jsonl'
      assert o['sampler.checkpoint_dir'] == ckpt
      assert o['dataset.limit'] == 0
  assert report_flags['rl_reach'] == (
      'siblings:eval_rl_siblings_sft:eval_rl_siblings_rl,'
      'untouched:eval_rl_untouched_sft:eval_rl_untouched_rl'
  )
  c.rl_seen.reach = 0  # the check without the reach sets
  stages = {s.name: s for s in plan.build(c)}
  assert 'reach' not in stages['rl_seen'].flags
  assert not set(families.REACH_STAGES) & set(stages)
  assert 'rl_reach' not in stages['report'].flags


def test_stage_env_holds_the_run_compilation_cache(monkeypatch):
  monkeypatch.delenv('JAX_COMPILATION_CACHE_DIR', raising=False)
  env = runner.stage_env('/runs/r', 'jax_cache')
  assert env['JAX_COMPILATION_CACHE_DIR'] == '/runs/r/jax_cache'
  assert env['PYTHONUNBUFFERED'] == '1'
  assert 'JAX_COMPILATION_CACHE_DIR' not in runner.stage_env('/runs/r', '')
  monkeypatch.setenv('JAX_COMPILATION_CACHE_DIR', '/mine')  # the user's wins
  assert runner.stage_env('/r', 'jax_cache')['JAX_COMPILATION_CACHE_DIR'] == (
      '/mine'
  )
  assert pipeline_config.get_config('tiny').compilation_cache == 'jax_cache'


def _parsed_config(stage):
  """The stage's config file with its --config.* overrides, as the binary
  parses them."""
  argv = ['binary'] + [
      a for a in stage.argv(sys.executable, '/r') if a.startswith('--config')
  ]
  values = flags.FlagValues()
  config_flags.DEFINE_config_file(
      'config', None, flag_values=values, sys_argv=argv
  )
  values(argv)
  return values.config


def test_model_sizes_reach_every_model_stage_only_when_set():
  c = pipeline_config.get_config('tiny')
  c.base.path, c.model.dims = '', ()  # pretrained here, at the preset's sizes
  c.climb.enabled = True
  built = plan.build(c)
  assert not any('dims' in k for s in built for k in s.overrides)
  learn = {s.name: s for s in plan.build(pipeline_config.get_config('learn'))}
  assert _parsed_config(learn['sft']).model.dims.base_num_decoder_layers == 4
  c.model.dims = ('head_dim=32', 'base_num_decoder_layers=3')
  stages = {s.name: s for s in plan.build(c)}
  for name in ('pretrain', 'sft', 'climb_sft', 'rl', 'climb_rl'):
    dims = _parsed_config(stages[name]).model.dims
    assert (dims.head_dim, dims.base_num_decoder_layers) == (32, 3), name
    assert dims.base_emb_dim == 64, name  # the rest stay the preset's
  for name in ('eval_before_sft', 'eval_after_sft', 'eval_after_rl',
               'eval_after_climb'):  # fmt: skip
    sampler = _parsed_config(stages[name]).sampler
    assert tuple(sampler.dims) == ('head_dim=32', 'base_num_decoder_layers=3')
  # The other stages (and so their hashes) are untouched.
  for name in ('index', 'tasks', 'tokenizer', 'collect', 'filter', 'split'):
    assert stages[name] == {s.name: s for s in built}[name]


def test_rl_samples_through_local_servers_unless_in_process():
  assert pipeline_config.get_config('learn').rl.policy == 'server'
  c = pipeline_config.get_config('tiny')
  assert c.rl.policy == 'server'  # the default
  c.rl.policy = 'in_process'
  built = {s.name: s for s in plan.build(c)}
  # In-process: no override, so runs from before the option reuse their RL.
  local = ('rollout.policy', 'rollout.local_servers.count')
  assert not set(local) & set(built['rl'].overrides)
  c.rl.policy, c.rl.servers = 'server', 2
  rl_stage = {s.name: s for s in plan.build(c)}['rl']
  rc = rl_config.get_config('tiny')
  for key, value in rl_stage.overrides.items():
    if '{' not in str(value) and not key.startswith('model.dims.'):
      section, _, field = key.rpartition('.')
      (rc[section] if section else rc)[field] = value
  assert local_servers.wanted(rc) == 2
  c.rl.policy = 'remote'
  with pytest.raises(plan.PlanError, match="rl.policy 'remote'"):
    plan.build(c)


def test_rl_key_figure_is_the_mean_reward_and_its_quarters(tmp_path):
  rows = [
      {'step': i + 1, 'reward_mean': r}
      for i, r in enumerate([0, 0, 0.2, 0.2, 0.4, 0.4, 0.6, 0.6])
  ]
  (tmp_path / 'metrics.jsonl').write_text(
      ''.join(json.dumps(r) + '\n' for r in rows)
  )
  assert figures.rl_figure(str(tmp_path)) == (
      '8 updates, reward_mean 0.300 (first quarter 0.000, last 0.600)'
  )
  (tmp_path / 'metrics.jsonl').write_text(json.dumps(rows[2]) + '\n')
  assert figures.rl_figure(str(tmp_path)) == '3 updates, reward_mean 0.200'


def test_held_out_phrasings_are_scored_after_sft_and_after_rl():
  c = pipeline_config.get_config('tiny')
  stages = {s.name: s for s in plan.build(c)}
  assert stages['tasks'].overrides['heldout_phrasings'] == 1
  names = list(stages)
  for page, phrased, checkpoint in (
      ('eval_after_sft', 'eval_phrasings_after_sft', '{sft}'),
      ('eval_after_rl', 'eval_phrasings_after_rl', '{rl}'),
  ):
    assert names.index(phrased) == names.index(page) + 1
    o = stages[phrased].overrides
    assert o['dataset.path'] == '{tasks}/tasks.heldout_phrasings.jsonl'
    assert o['dataset.limit'] == 50
    assert o['sampler.checkpoint_dir'] == checkpoint
    # The held-out page evaluation's machinery, on other tasks.
    differ = {k for k, v in o.items() if stages[page].overrides[k] != v}
    assert differ == {
        'dataset.name',
        'dataset.path',
        'dataset.limit',
        'policy.name',
    }
  assert stages['report'].flags['phrasings'] == (
      'after_sft:eval_phrasings_after_sft,after_rl:eval_phrasings_after_rl'
  )
  # Training reads the train split only, which holds no held-out phrasing.
  assert stages['collect'].flags['tasks'] == '{tasks}/tasks.train.jsonl'
  assert stages['rl'].overrides['tasks_path'] == '{tasks}/tasks.train.jsonl'
  learn = {s.name: s for s in plan.build(pipeline_config.get_config('learn'))}
  assert learn['eval_phrasings_after_rl'].overrides['dataset.limit'] == 100
  c.tasks.heldout_phrasings = 0
  stages = {s.name: s for s in plan.build(c)}
  assert not set(plan.PHRASING_EVALS.values()) & set(stages)
  assert 'phrasings' not in stages['report'].flags
  assert stages['tasks'].overrides['heldout_phrasings'] == 0


def test_the_search_backend_reaches_the_index_and_every_stage_that_searches(
    tmp_path,
):
  c = pipeline_config.get_config('tiny')
  c.rl_seen.enabled = True
  tantivy = {s.name: s for s in plan.build(c)}
  assert tantivy['index'].overrides == {'progress': False}  # hash kept
  c.search.backend = 'elasticsearch'
  c.search.shards, c.search.replicas = 4, 1
  stages = {s.name: s for s in plan.build(c)}
  index = stages['index']
  assert index.overrides['backend'] == 'opensearch'
  assert index.overrides['opensearch.cluster.flavor'] == 'elasticsearch'
  assert index.overrides['opensearch.index.shards'] == 4
  assert index.overrides['opensearch.index.replicas'] == 1
  argv = index.argv(sys.executable, str(tmp_path))
  hosts = "('http://127.0.0.1:9301', 'http://127.0.0.1:9302',"
  assert any(a.startswith('--config.opensearch.cluster.hosts=' + hosts)
             for a in argv)  # fmt: skip
  # Every stage that searches opens {index}/index, where the cluster build
  # leaves its location (search/locations.py): it reads the index stage.
  searching = {
      'collect': stages['collect'].flags['index_dir'],
      'rl': stages['rl'].overrides['search.index_dir'],
      **{
          n: s.overrides['search.index_dir']
          for n, s in stages.items()
          if n.startswith('eval_')
      },
  }
  assert len(searching) >= 7, sorted(searching)
  for name, index_dir in searching.items():
    assert index_dir == '{index}/index', name
    assert 'index' in stages[name].inputs(), name
  c.search.backend = 'solr'
  with pytest.raises(plan.PlanError, match='search.backend'):
    plan.build(c)
