"""RL's question pool from a probe of the SFT policy (rl_pool_job.py)."""

import json
import subprocess
import sys

import pytest

from search_agent.pipeline import report_md
from search_agent.pipeline import rl_pool_job


def test_keeps_answered_tasks_and_a_seeded_share_of_missed_ones():
  ids = [f't{i}' for i in range(10)]
  outcomes = {'t1': True, 't4': True, 't5': False, 't6': False, 't7': False}
  outcomes.update({'t8': False, 't9': True, 't0': False})
  # 3 answered; 0.67 x 3 = 2 of the 5 missed; t2, t3 were not probed.
  kept = rl_pool_job.select(ids, outcomes, 0.67, seed=0)
  assert {'t1', 't4', 't9'} < set(kept) and len(kept) == 5
  assert not {'t2', 't3'} & set(kept)
  assert kept == sorted(kept, key=ids.index)  # the task file's order
  assert kept == rl_pool_job.select(ids, outcomes, 0.67, seed=0)  # seeded
  assert rl_pool_job.select(ids, outcomes, 0.0) == ['t1', 't4', 't9']
  # More asked for than were missed: every probed task.
  assert len(rl_pool_job.select(ids, outcomes, 10.0)) == 8
  with pytest.raises(rl_pool_job.PoolError, match='unsolved_fraction'):
    rl_pool_job.select(ids, outcomes, -0.1)


def _write(path, rows):
  path.write_text(''.join(json.dumps(r) + '\n' for r in rows))


def _run(*args):
  return subprocess.run(
      [sys.executable, '-m', 'search_agent.pipeline.rl_pool', *args],
      capture_output=True,
      text=True,
  )


def test_binary_writes_the_pool_and_refuses_a_pool_too_small(tmp_path):
  tasks = [
      {'id': f't{i}', 'question': f'q{i}?', 'answer': f'a{i}'} for i in range(6)
  ]
  _write(tmp_path / 'tasks.jsonl', tasks)
  probe = tmp_path / 'probe'
  probe.mkdir()
  _write(
      probe / 'results.jsonl',
      [
          {'task_id': 't0', 'correct': False},
          {'task_id': 't2', 'correct': True},
          {'task_id': 't3', 'correct': False},
          {'task_id': 't3', 'correct': True},  # a later grade wins
          {'task_id': 't4', 'correct': False},
      ],
  )
  out = tmp_path / 'pool'
  common = [f'--tasks={tmp_path}/tasks.jsonl', f'--probe={probe}']
  r = _run(
      *common, f'--workdir={out}', '--unsolved_fraction=0.5', '--min_tasks=1'
  )
  assert r.returncode == 0, r.stderr
  kept = [json.loads(l) for l in (out / 'tasks.jsonl').read_text().splitlines()]
  assert {'t2', 't3'} < {t['id'] for t in kept} and len(kept) == 3
  assert kept[0] == next(t for t in tasks if t['id'] == kept[0]['id'])
  pool = json.loads((out / 'pool.json').read_text())
  assert pool == {'probed': 4, 'answered': 2, 'kept': 3, 'kept_answered': 2}
  # Too few for RL: a clear error naming the counts, nothing written.
  r = _run(*common, f'--workdir={tmp_path}/small', '--min_tasks=4')
  assert r.returncode == 1 and 'Traceback' not in r.stderr
  assert 'answered 2 of 4 tasks' in r.stderr and 'min_tasks=4' in r.stderr
  assert not (tmp_path / 'small').exists()
  # A probe of another task file.
  _write(probe / 'results.jsonl', [{'task_id': 'zz', 'correct': True}])
  r = _run(*common, f'--workdir={tmp_path}/other')
  assert r.returncode != 0 and 'not in' in r.stderr


def test_the_report_names_the_pool():
  rep = {
      'curves': {},
      'rl_pool': {'probed': 480, 'answered': 171, 'kept': 214,
                  'kept_answered': 171},  # fmt: skip
  }
  [line] = report_md._curves(rep)  # pylint: disable=protected-access
  assert '214 train tasks (171 the SFT policy answered of 480 probed' in line
