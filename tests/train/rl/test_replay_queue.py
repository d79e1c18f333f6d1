"""The durable replay queue: kill a real worker process, restart the learner.

Every dispatched group must end up in exactly one committed update.
"""

import os
import pathlib
import subprocess
import sys
import time

import pytest

from search_agent.train.rl import replay_queue

WORKER = pathlib.Path(__file__).with_name('replay_worker.py')


def _spawn(root, worker, crash_after, repo_root):
  env = dict(os.environ, PYTHONPATH=str(repo_root))
  return subprocess.Popen(
      [sys.executable, str(WORKER), str(root), worker, str(crash_after)],
      env=env,
      cwd=repo_root,
  )


def _wait_for(pred, timeout=60.0):
  end = time.monotonic() + timeout
  while not pred():
    if time.monotonic() > end:
      raise TimeoutError('condition not reached')
    time.sleep(0.02)


def test_worker_crash_and_learner_restart_lose_and_repeat_nothing(
    tmp_path, repo_root
):
  root = tmp_path / 'q'
  q = replay_queue.ReplayQueue(root)
  gids = [f'q{i}@0' for i in range(12)]
  for i, g in enumerate(gids):
    q.enqueue(g, {'task_id': f'q{i}', 'batch': 0})

  a = _spawn(root, 'A', 3, repo_root)  # delivers 3, dies writing the 4th
  _wait_for(lambda: any((root / 'tmp').glob('*.partial')))
  a.kill()
  a.wait()
  assert len(list((root / 'groups').glob('*.json'))) == 3
  (lost,) = q.release_worker('A')  # the claimed, undelivered group
  assert (root / 'work' / f'{lost}.json').exists()

  # Learner: update 0 commits; update 1 commits but the learner dies before
  # checkpoint 2 is written; a third take is never committed.
  learner = replay_queue.ReplayQueue(root)
  u0 = learner.take(3)
  learner.commit(0, [g.group_id for g in u0])
  b = _spawn(root, 'B', -1, repo_root)
  _wait_for(lambda: len(list((root / 'groups').glob('*.json'))) >= 6)
  u1 = learner.take(3)
  learner.commit(1, [g.group_id for g in u1])
  learner.take(3)  # uncommitted, lost with the learner
  with open(learner.journal, 'a', encoding='utf-8') as f:
    f.write('{"update": 2, "gro')  # torn write of update 2

  restarted = replay_queue.ReplayQueue(root)
  rolled = restarted.recover(checkpoint_step=1)  # checkpoint 1 on disk
  assert rolled == sorted(g.group_id for g in u1)
  assert b.wait(timeout=60) == 0
  update = 1
  while groups := restarted.take(3):
    restarted.commit(update, [g.group_id for g in groups])
    update += 1

  used = replay_queue.ReplayQueue(root).consumed()
  assert sorted(used) == sorted(gids)  # none lost, none twice
  assert not list((root / 'leased').iterdir())
  assert not list((root / 'work').iterdir())
  assert restarted.clean_tmp(max_age_s=0, now=time.time() + 1) == 1  # A's


def test_duplicate_delivery_and_double_commit_rejected(tmp_path):
  sys.path.insert(0, str(WORKER.parent))
  import replay_worker  # pylint: disable=g-import-not-at-top

  q = replay_queue.ReplayQueue(tmp_path)
  q.enqueue('g@0', {'task_id': 'g', 'batch': 0})
  item = q.claim('slow')
  assert q.claim('other') is None
  assert q.expire_leases(max_age_s=10, now=time.time() + 60) == ['g@0']
  item2 = q.claim('fast')
  assert item2 == item
  group = replay_worker.make_group(item)
  assert q.deliver(group, 'fast')
  assert not q.deliver(group, 'slow')  # presumed dead, delivered late
  (taken,) = q.take(5)
  assert taken == group
  q.commit(0, ['g@0'])
  with pytest.raises(replay_queue.ReplayQueueError, match='already used'):
    q.commit(1, ['g@0'])
  assert q.take(5) == []


def test_lease_age_counts_from_the_claim_not_the_enqueue(tmp_path):
  q = replay_queue.ReplayQueue(tmp_path)
  q.enqueue('g@0', {'task_id': 'g', 'batch': 0})
  two_hours_ago = time.time() - 7200
  os.utime(tmp_path / 'work' / 'g@0.json', (two_hours_ago, two_hours_ago))
  assert q.claim('w1') is not None  # waited 2 h in work/, claimed now
  assert q.expire_leases(max_age_s=600) == []  # a live lease stays
  assert q.expire_leases(max_age_s=600, now=time.time() + 601) == ['g@0']
