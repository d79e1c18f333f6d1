"""SelfPlayWorker.run_group: one seed work item -> a replay group, Task
JSONL and the seed log (real harness and index; scripted policy, which has
no token ids, so no rollout is trainable here)."""

import asyncio
import json
import pathlib
import sys

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.llm import scripted
from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import selfplay
from tpu_configs import rl as rl_config

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import scripts  # pylint: disable=g-import-not-at-top,wrong-import-position

SEED = task_lib.Task(
    id='seed:Teutberga', question='Teutberga was a queen of Lotharingia.',
    answer='', meta={'title': 'Teutberga'},
)  # fmt: skip


def test_run_group_writes_tasks_and_the_seed_log(tmp_path, toolbox_factory):
  c = rl_config.get_config('searchmaster,tiny')
  c.selfplay.proposer_max_steps = 8
  c.selfplay.solver_max_steps = 4
  prop, solve = scripts.proposer(), scripts.solver(['Lothair I', 'Otto'])

  def respond(messages):
    is_prop = 'Proposer' in messages[0]['content']
    return prop(messages) if is_prop else solve(messages)

  make = selfplay.worker_factory(c, str(tmp_path), react.AgentConfig())
  worker = make(
      rollout_worker.WorkerConfig(),
      policy=scripted.ScriptedLLM(respond),
      agent_cfg=react.AgentConfig(),
      toolbox_factory=lambda task: toolbox_factory(),
      system_text='Answer with <answer>.',
      scorer=None,
      queue=replay_queue.ReplayQueue(str(tmp_path / 'queue')),
      errors_path=tmp_path / 'errors.jsonl',
      rollouts_path=tmp_path / 'rollouts.jsonl',
  )
  assert worker.scorer.manifest['name'] == 'programmatic'
  item = {'group_id': 'seed:Teutberga@0', 'batch': 0, 'task': SEED.to_json()}
  group = asyncio.run(worker.run_group(item))
  # No token ids from a scripted LLM: every rollout is inexact, none trains.
  assert group.trajectories == () and group.meta['selfplay']['split'] == [0, 0]
  summary = group.meta['selfplay']['summary']
  assert summary['failed_filters'] == [None, None]
  assert sorted(summary['solver_correct']) == [0, 0, 1, 1]
  tasks = list(task_lib.iter_tasks(tmp_path / 'selfplay' / 'tasks.jsonl'))
  assert [t.id for t in tasks] == ['seed:Teutberga@0/p0', 'seed:Teutberga@0/p1']
  assert {t.answer for t in tasks} == {'Lothair I'}
  assert [t.meta['chosen'] for t in tasks].count(True) == 1
  assert sum(t.meta['solver_correct'] for t in tasks) == 2
  assert all(t.meta['k_solver'] == 2 for t in tasks)
  (line,) = (tmp_path / 'selfplay' / 'seeds_played.jsonl').open()
  assert json.loads(line)['seed_task'] == 'seed:Teutberga'
