"""Runner: bounded concurrency, crashes recorded as failed, resume; and a
scripted agent end to end against the real index of the bundled corpus."""

import asyncio
import json

from search_agent.agent import react
from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.corpus.sources import CorpusSpec
from search_agent.llm import scripted
from search_agent.search import tools
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index

TASKS = [
    task_lib.Task(id=f't{i}', question=f'q{i}?', answer='a') for i in range(6)
]


def _ok(task, traj_id):
  return trajectory.Trajectory(
      id=traj_id,
      task_id=task.id,
      question=task.question,
      messages=(trajectory.Turn(role='user', content=task.question),),
      final_answer='a',
  )


def test_rewrite_in_task_order_keeps_every_line_byte_for_byte(tmp_path):
  out = tmp_path / 'traj.jsonl'

  async def run_one(task, traj_id):  # later tasks finish first
    await asyncio.sleep(0.01 * (6 - int(task.id[1:])))
    return _ok(task, traj_id)

  asyncio.run(
      runner.run_all(TASKS[:3], run_one, out, max_concurrency=6, samples=2)
  )
  finished = out.read_text().splitlines(keepends=True)
  assert json.loads(finished[0])['id'].startswith('t2#')  # completion order
  with open(out, 'a', encoding='utf-8') as f:
    f.write('{"id": "other#0"}\nnot json\n')
  runner.rewrite_in_task_order(out, TASKS[:3], samples=2)
  lines = out.read_text().splitlines(keepends=True)
  ids = [json.loads(l)['id'] for l in lines[:6]]
  assert ids == ['t0#0', 't0#1', 't1#0', 't1#1', 't2#0', 't2#1']
  assert sorted(lines[:6]) == sorted(finished)  # the same bytes
  assert lines[6:] == ['{"id": "other#0"}\n', 'not json\n']  # kept, last
  assert not list(tmp_path.glob('*.tmp*'))  # no temporary file left


def test_bound_crash_and_resume(tmp_path):
  out = tmp_path / 'traj.jsonl'
  state = {'now': 0, 'max': 0}

  async def run_one(task, traj_id):
    state['now'] += 1
    state['max'] = max(state['max'], state['now'])
    await asyncio.sleep(0.02)
    state['now'] -= 1
    if task.id == 't3':
      raise RuntimeError('search service went away')
    return _ok(task, traj_id)

  written = asyncio.run(runner.run_all(TASKS, run_one, out, max_concurrency=2))
  assert len(written) == 6 and state['max'] == 2
  on_disk = {t.id: t for t in trajectory.iter_jsonl(out)}
  assert set(on_disk) == {f't{i}#0' for i in range(6)}
  crashed = on_disk['t3#0']
  assert crashed.status == 'failed'
  assert crashed.error.startswith('RuntimeError: search service went away')
  assert 'Traceback' in crashed.error
  assert on_disk['t0#0'].status == 'answered'

  # Resume: nothing left for sample 0; a second sample runs every task.
  again = asyncio.run(runner.run_all(TASKS, run_one, out, max_concurrency=3))
  assert again == []
  more = asyncio.run(
      runner.run_all(TASKS[:2], run_one, out, max_concurrency=3, samples=2)
  )
  assert sorted(t.id for t in more) == ['t0#1', 't1#1']
  assert len(list(trajectory.iter_jsonl(out))) == 8


def test_scripted_agents_against_the_real_index(tmp_path, repo_root):
  """End to end: runner + ReAct + real Toolbox over the bundled corpus."""

  build_tantivy_index(CorpusSpec(max_docs=500), tmp_path / 'index')
  engine = tantivy_engine(tmp_path / 'index')

  def policy(messages):
    """Search the question, visit the top hit, answer its title."""
    steps = sum(m['role'] == 'assistant' for m in messages)
    if steps == 0:
      call = {
          'name': 'search',
          'arguments': {'query': [messages[1]['content']]},
      }
    elif steps == 1:
      goal = 'who is named here'
      call = {'name': 'visit', 'arguments': {'ref_id': ['r1'], 'goal': goal}}
    else:
      first = messages[3]['content'].split('[r1] ')[1].split('\n')[0]
      return f'Confidence: 50%\n<answer>{first}</answer>'
    return f'<tool_call>{json.dumps(call)}</tool_call>'

  agent = react.ReActAgent(scripted.ScriptedLLM(policy), react.AgentConfig())
  config = tools.ToolboxConfig(tools=('search', 'visit'), top_k=3)
  tasks = list(
      task_lib.iter_tasks(repo_root / 'eval/data/2wiki_demo_tasks.jsonl')
  )

  async def run_one(task, traj_id):
    return await agent.run(
        traj_id=traj_id,
        task_id=task.id,
        question=task.question,
        system_prompt='You search.',
        toolbox=tools.Toolbox(engine, config=config),
    )

  out = tmp_path / 'traj.jsonl'
  try:
    asyncio.run(runner.run_all(tasks, run_one, out, max_concurrency=2))
  finally:
    engine.close()
  trajs = {t.task_id: t for t in trajectory.iter_jsonl(out)}
  assert set(trajs) == {t.id for t in tasks}
  for t in trajs.values():
    assert t.status == 'answered' and t.meta['steps'] == 3
    names = [c.name for c in t.tool_calls]
    assert names == ['search', 'visit']
    search_obs, visit_obs = [m.content for m in t.messages if m.role == 'tool']
    assert search_obs.count('URL: https://en.wikipedia.org/wiki/') == 3
    assert t.final_answer in visit_obs  # the visited page is the top hit
  boritzer = trajs['2wiki-demo-4']
  assert boritzer.final_answer == 'Etan Boritzer'
  assert '1950' in boritzer.messages[5].content
