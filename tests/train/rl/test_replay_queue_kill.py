"""SIGKILL a real worker process at each point inside ReplayQueue.deliver.

The worker (this file run as a script) delivers a few groups, then on its next
delivery stops at one point of `deliver` (mid tmp write, before the link,
after the link, after the tmp unlink) and waits there; the test SIGKILLs it,
releases its lease as the orchestrator does for a dead worker, and runs the
same worker command again to finish the queue. Every group must be delivered
once with its full contents and consumed in exactly one update; the group
killed before its link is re-offered, the one killed after it is not.

  python test_replay_queue_kill.py ROOT WORKER POINT DELIVER_FIRST
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from search_agent.train.rl import replay_queue

_HERE = pathlib.Path(__file__).parent
POINTS = ('mid_tmp_write', 'before_link', 'after_link', 'after_tmp_unlink')


def _pause(root: str, point: str) -> None:
  marker = pathlib.Path(root).parent / f'paused-{point}'
  marker.write_text(str(os.getpid()))
  time.sleep(3600)  # SIGKILLed here


class _Os:
  """`os` for replay_queue, pausing around link/unlink at the chosen point."""

  def __init__(self, root: str, point: str):
    self._root, self._point, self.armed = root, point, False

  def __getattr__(self, name):
    return getattr(os, name)

  def link(self, src, dst):
    if self.armed and self._point == 'before_link':
      _pause(self._root, self._point)
    os.link(src, dst)
    if self.armed and self._point == 'after_link':
      _pause(self._root, self._point)

  def unlink(self, path):
    os.unlink(path)
    if self.armed and self._point == 'after_tmp_unlink':
      _pause(self._root, self._point)


def worker_main(root: str, worker: str, point: str, first: int) -> None:
  sys.path.insert(0, str(_HERE))
  import replay_worker  # pylint: disable=g-import-not-at-top

  proxy = _Os(root, point)
  replay_queue.os = proxy
  write = replay_queue._write_synced  # pylint: disable=protected-access

  def torn_write(path, data):
    if proxy.armed and point == 'mid_tmp_write':
      with open(path, 'w', encoding='utf-8') as f:
        f.write(data[: len(data) // 2])
        f.flush()
      _pause(root, point)
    write(path, data)

  replay_queue._write_synced = torn_write  # pylint: disable=protected-access
  q = replay_queue.ReplayQueue(root)
  delivered = 0
  while (item := q.claim(worker)) is not None:
    proxy.armed = delivered == first
    q.deliver(replay_worker.make_group(item), worker)
    delivered += 1


def _run_worker(root, point, first, repo_root):
  env = dict(os.environ, PYTHONPATH=str(repo_root))
  cmd = [sys.executable, __file__, str(root), 'A', point, str(first)]
  return subprocess.Popen(cmd, env=env, cwd=repo_root)


@pytest.mark.parametrize('point', POINTS)
def test_sigkill_inside_deliver_loses_and_repeats_nothing(
    tmp_path, repo_root, point
):
  sys.path.insert(0, str(_HERE))
  import replay_worker  # pylint: disable=g-import-not-at-top

  root = tmp_path / 'q'
  q = replay_queue.ReplayQueue(root)
  items = {}
  for i in range(6):
    items[f'q{i}@0'] = {'group_id': f'q{i}@0', 'task_id': f'q{i}', 'batch': 0}
    q.enqueue(f'q{i}@0', {'task_id': f'q{i}', 'batch': 0})

  proc = _run_worker(root, point, 2, repo_root)
  marker = tmp_path / f'paused-{point}'
  end = time.monotonic() + 60
  while not marker.exists():
    assert proc.poll() is None, f'worker exited {proc.returncode}'
    assert time.monotonic() < end, 'worker never reached the kill point'
    time.sleep(0.01)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait(timeout=30) == -signal.SIGKILL
  (killed,) = [p.stem.split('@A')[0] for p in (root / 'leased').iterdir()]

  # The orchestrator releases the dead worker's lease; the same command
  # (nothing armed now: DELIVER_FIRST -1) finishes the queue.
  back = q.release_worker('A')
  delivered_before_kill = point in ('after_link', 'after_tmp_unlink')
  assert back == ([] if delivered_before_kill else [killed])
  assert _run_worker(root, point, -1, repo_root).wait(timeout=60) == 0

  learner = replay_queue.ReplayQueue(root)
  update = 0
  while groups := learner.take(4):
    for g in groups:  # full contents, never a torn file
      assert g == replay_worker.make_group(items[g.group_id])
    learner.commit(update, [g.group_id for g in groups])
    update += 1
  consumed = replay_queue.ReplayQueue(root).consumed()
  assert sorted(consumed) == sorted(items)  # each once (commit checks twice)
  assert not list((root / 'leased').iterdir())
  assert not list((root / 'work').iterdir())
  left = 0 if point == 'after_tmp_unlink' else 1  # the killed writer's tmp
  assert q.clean_tmp(max_age_s=0, now=time.time() + 1) == left
  assert sorted(p.stem for p in (root / 'groups').iterdir()) == sorted(items)
  json.loads((root / 'groups' / f'{killed}.json').read_text())


if __name__ == '__main__':
  worker_main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
