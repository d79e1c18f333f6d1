"""Runner: bounded concurrency, crashes recorded as failed, resume."""

import asyncio

from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory

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
