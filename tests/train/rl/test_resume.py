"""SIGKILL of a rollout worker and of the learner, as separate processes.

The learner (--role=learner) and a rollout worker (--role=rollout) share
only the workdir. The worker is killed while it holds a claim and restarted
under the same id; the learner is killed after its first checkpoint while
groups of the next update are in flight, and restarted with the same
command. The run still ends at the target version with every update listed
once, no group used twice, and every delivered group used, dropped or still
pending in the learner's state (none lost).
"""

import json
import pathlib
import signal
import sys
import time

import pytest

from search_agent.train.rl import replay_queue

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

UPDATES = 3


def _wait(cond, procs, log, timeout=600):
  deadline = time.monotonic() + timeout
  while not cond():
    for p in procs:
      if p.poll() is not None:
        pytest.fail(f'process exited {p.returncode}:\n{rl_run.log_tail(log)}')
    if time.monotonic() > deadline:
      pytest.fail(f'timed out:\n{rl_run.log_tail(log)}')
    time.sleep(0.2)


def test_kill_worker_and_learner_lose_nothing(tmp_path):
  w = tmp_path / 'run'
  log = tmp_path / 'log.txt'
  learner_args = ('--role=learner', f'--config.max_updates={UPDATES}')
  worker_args = ('--role=rollout', '--config.rollout.worker_id=w0')
  learner = rl_run.start(w, *learner_args, devices=2, log=log)
  worker = rl_run.start(w, *worker_args, devices=2, log=log)
  q = w / 'queue'
  # 1. Kill the worker while it holds a claim; restart it under its id.
  _wait(lambda: any((q / 'leased').glob('*@w0.json')) if (
      q / 'leased').exists() else False, [learner, worker], log)  # fmt: skip
  held = sorted(p.name for p in (q / 'leased').glob('*@w0.json'))
  worker.send_signal(signal.SIGKILL)
  worker.wait()
  worker = rl_run.start(w, *worker_args, devices=2, log=log)

  # 2. Kill the learner after checkpoint 1 with groups of update 2 around.
  def mid_update_2():
    if not (w / 'checkpoints' / '1').exists():
      return False
    delivered = {p.stem for p in (q / 'groups').glob('*.json')}
    used = set(replay_queue.ReplayQueue(q).consumed())
    return len(delivered - used) >= 1

  _wait(mid_update_2, [learner, worker], log)
  learner.send_signal(signal.SIGKILL)
  learner.wait()
  killed_at = max(r['update'] for r in rl_run.metrics(w))
  learner = rl_run.start(w, *learner_args, devices=2, log=log)
  assert learner.wait(timeout=900) == 0, rl_run.log_tail(log)
  # The worker stops by itself once the learner is done.
  assert worker.wait(timeout=120) == 0, rl_run.log_tail(log)

  text = log.read_text(errors='replace')
  assert 'took back' in text  # the restarted worker re-offered its claims
  assert f'resumed at policy version {killed_at}' in text
  recs = rl_run.metrics(w)
  assert [r['update'] for r in recs] == list(range(1, UPDATES + 1))
  assert recs[-1]['policy_version'] == UPDATES
  queue = replay_queue.ReplayQueue(q)
  used = queue.consumed()  # raises if a group is journaled twice
  assert sorted(set(used.values())) == list(range(UPDATES))
  state = json.loads((w / 'learner' / 'state.json').read_text())['scheduler']
  pending = {d['group_id'] for d in state['in_flight']} | set(state['ready'])
  delivered = {p.stem for p in (q / 'groups').glob('*.json')}
  lost = delivered - set(used) - queue.dropped() - pending
  assert not lost
  # The claims the killed worker held were delivered by its successor.
  for name in held:
    gid = name[: -len('@w0.json')]
    assert gid in delivered or gid in pending
