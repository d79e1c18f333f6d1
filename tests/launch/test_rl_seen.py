"""The tasks RL trained on: consumed groups only, in the order of use."""

import hashlib
import json

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.pipeline import rl_seen_job
from search_agent.train.rl import replay_queue


def _rollout(tid, gid, i):
  return traj_lib.Trajectory(
      id=f'{gid}#{i}', task_id=tid, question='q',
      messages=(traj_lib.Turn(role='user', content='q'),),
      final_answer='a', status='answered', meta={'group_id': gid},
  )  # fmt: skip


def _tasks(path, ids):
  path.write_text(''.join(json.dumps({'id': i, 'q': i}) + '\n' for i in ids))


def test_consumed_groups_tasks_in_update_order(tmp_path):
  run = tmp_path / 'rl'
  q = replay_queue.ReplayQueue(run / 'queue')
  q.commit(0, ['b@0', 'a@0'])
  q.commit(1, ['c@1', 'b@3'])
  for tid, gid in (('a', 'a@0'), ('b', 'b@0'), ('c', 'c@1'), ('b', 'b@3'),
                   ('d', 'd@0')):  # fmt: skip
    for i in range(2):
      traj_lib.append_jsonl(run / 'rollouts-w0.jsonl', _rollout(tid, gid, i))
  _tasks(tmp_path / 'tasks.jsonl', ['a', 'b', 'c', 'd', 'e'])
  counts = rl_seen_job.write(
      str(run), str(tmp_path / 'tasks.jsonl'), str(tmp_path / 'out')
  )
  assert counts['tasks'] == 3
  rows = [json.loads(l) for l in open(tmp_path / 'out' / 'tasks.jsonl')]
  assert [r['id'] for r in rows] == ['a', 'b', 'c']  # d: never consumed
  assert rows[0] == {'id': 'a', 'q': 'a'}  # the task file's rows


def test_no_update_or_an_unknown_task_is_an_error(tmp_path):
  run = tmp_path / 'rl'
  replay_queue.ReplayQueue(run / 'queue')
  _tasks(tmp_path / 'tasks.jsonl', ['a'])
  with pytest.raises(rl_seen_job.SeenError, match='no update consumed'):
    rl_seen_job.write(
        str(run), str(tmp_path / 'tasks.jsonl'), str(tmp_path / 'o')
    )
  replay_queue.ReplayQueue(run / 'queue').commit(0, ['z@0'])
  traj_lib.append_jsonl(run / 'rollouts-w0.jsonl', _rollout('z', 'z@0', 0))
  with pytest.raises(rl_seen_job.SeenError, match="not in .*'z'"):
    rl_seen_job.write(
        str(run), str(tmp_path / 'tasks.jsonl'), str(tmp_path / 'o')
    )


def test_the_task_file_is_the_one_the_run_drew_from(tmp_path):
  run = tmp_path / 'rl'
  replay_queue.ReplayQueue(run / 'queue').commit(0, ['b@0'])
  traj_lib.append_jsonl(run / 'rollouts-w0.jsonl', _rollout('b', 'b@0', 0))
  with pytest.raises(rl_seen_job.SeenError, match='no manifest.json'):
    rl_seen_job.write(str(run), None, str(tmp_path / 'o'))
  drawn, other = tmp_path / 'pool.jsonl', tmp_path / 'train.jsonl'
  _tasks(drawn, ['a', 'b'])
  _tasks(other, ['a'])
  sha = hashlib.sha256(drawn.read_bytes()).hexdigest()
  (run / 'manifest.json').write_text(
      json.dumps({'tasks': {'path': str(drawn), 'sha256': sha}})
  )
  for given in (None, str(other)):  # the manifest's file wins
    counts = rl_seen_job.write(str(run), given, str(tmp_path / 'o'))
    assert counts == {'tasks': 1, 'rl_workdir': str(run), 'from': str(drawn)}
  moved = tmp_path / 'moved.jsonl'
  drawn.rename(moved)  # a run directory copied elsewhere: the same content
  assert rl_seen_job.write(str(run), str(moved), str(tmp_path / 'o'))[
      'from'
  ] == (str(moved))
  with pytest.raises(rl_seen_job.SeenError, match='neither it nor'):
    rl_seen_job.write(str(run), str(other), str(tmp_path / 'o'))


def _task(tid, *pages):
  return {'id': tid, 'question': f'q {tid}', 'answer': 'a',
          'evidence': list(pages)}  # fmt: skip


def test_reach_splits_the_tasks_rl_did_not_train_on_by_their_pages():
  rows = [
      _task('seen1', 'P'), _task('seen2', 'Q', 'R'),
      _task('sib_p', 'P'), _task('sib_r', 'S', 'R'),  # share P, R
      _task('u1', 'X'), _task('u2', 'Y', 'Z'), _task('u3', 'W'),
  ]  # fmt: skip
  sets = rl_seen_job.reach_sets(rows, ['seen1', 'seen2'], n=10)
  assert [r['id'] for r in sets['siblings']] == ['sib_p', 'sib_r']
  assert [r['id'] for r in sets['untouched']] == ['u1', 'u2', 'u3']
  two = rl_seen_job.reach_sets(rows, ['seen1', 'seen2'], n=2)
  ids = [r['id'] for r in two['untouched']]
  assert len(ids) == 2 and set(ids) < {'u1', 'u2', 'u3'}
  assert ids == sorted(ids, key=['u1', 'u2', 'u3'].index)  # file order
  assert two == rl_seen_job.reach_sets(rows, ['seen1', 'seen2'], n=2)  # seeded


def test_write_with_reach_writes_both_sets(tmp_path):
  run = tmp_path / 'rl'
  replay_queue.ReplayQueue(run / 'queue').commit(0, ['a@0'])
  traj_lib.append_jsonl(run / 'rollouts-w0.jsonl', _rollout('a', 'a@0', 0))
  rows = [_task('a', 'P'), _task('b', 'P'), _task('c', 'Q')]
  (tmp_path / 'tasks.jsonl').write_text(
      ''.join(json.dumps(r) + '\n' for r in rows)
  )
  out = tmp_path / 'out'
  counts = rl_seen_job.write(
      str(run), str(tmp_path / 'tasks.jsonl'), str(out), 5
  )
  assert (counts['tasks'], counts['siblings'], counts['untouched']) == (1, 1, 1)
  for name, tid in (('siblings', 'b'), ('untouched', 'c'), ('tasks', 'a')):
    assert [json.loads(l)['id'] for l in open(out / f'{name}.jsonl')] == [tid]
  without = tmp_path / 'plain'
  assert 'siblings' not in rl_seen_job.write(
      str(run), str(tmp_path / 'tasks.jsonl'), str(without)
  )
  assert not (without / 'siblings.jsonl').exists()
