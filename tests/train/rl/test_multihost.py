"""The RL roles as a pod runs them, with real processes on 127.0.0.1.

The learner is one JAX program over 2 processes x 4 CPU devices
(`python -m launch.local --processes=2`), fed by one rollout worker process;
2 learner processes fed its groups (tests/train/rl/replay_feed.py) update
as a 1-process learner fed them does, and resume after one is killed. Weight versions
published by 2 processes load onto another mesh. `--role=all` refuses 2
processes. A killed learner process stops the other, and the rerun resumes.
"""

import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import numpy as np
import pytest

from launch import processes as processes_lib
from launch import spec as spec_lib
from search_agent.train.rl import weight_sync

sys.path.insert(0, str(pathlib.Path(__file__).parent))
# pylint: disable=g-import-not-at-top,wrong-import-position
import publish_hosts
import replay_feed
import rl_run

# The module's learners run one after another (about 6 to 10 minutes each on
# a busy 2-core CPU), and fixtures count towards the test that needs them.
pytestmark = [pytest.mark.slow, pytest.mark.maxtext, pytest.mark.timeout(2700)]

HERE = pathlib.Path(__file__).parent
REPO = rl_run.REPO
LAUNCH = 'tpu_configs/launch/rl.py'


def _local(role, workdir, log, *args, processes=1):
  """`python -m launch.local` of tpu_configs/launch/rl.py:tiny_<role>."""
  return subprocess.Popen(
      [sys.executable, '-m', 'launch.local', f'--config={LAUNCH}:tiny_{role}',
       f'--config.flags.workdir={workdir}', f'--processes={processes}',
       *args],
      cwd=REPO, stdout=open(log, 'wb'), stderr=subprocess.STDOUT,
  )  # fmt: skip


def _learner_1proc(workdir, log, *args):
  env = {**os.environ, 'XLA_FLAGS': '--xla_force_host_platform_device_count=8'}
  env.pop('JAX_COORDINATOR_ADDRESS', None)
  return subprocess.Popen(
      [sys.executable, '-m', 'search_agent.train.rl.run',
       '--config=tpu_configs/rl.py:tiny', '--role=learner',
       f'--workdir={workdir}', *args],
      cwd=REPO, env=env, stdout=open(log, 'wb'), stderr=subprocess.STDOUT,
  )  # fmt: skip


def _rel(a, b):
  return abs(a - b) / max(abs(a), abs(b), 1e-12)


def _assert_same_updates(got, want):
  assert [r['update'] for r in got] == [r['update'] for r in want]
  for g, w in zip(got, want):
    assert g['eligible_tokens'] == w['eligible_tokens']
    assert g['groups_used'] == w['groups_used']
    assert _rel(g['loss'], w['loss']) < 1e-5, (g['loss'], w['loss'])
    assert _rel(g['grad_norm'], w['grad_norm']) < 1e-5, (
        g['grad_norm'], w['grad_norm'])  # fmt: skip


@pytest.fixture(scope='module')
def two_process_run(tmp_path_factory):
  """Contract 2 of issue 42: the worker, then the learner as 2 processes."""
  tmp = tmp_path_factory.mktemp('pod')
  r = tmp / 'R'
  worker = _local('rollout', r, tmp / 'rollout.log')
  t0 = time.monotonic()
  learner = _local(
      'learner', r, tmp / 'learner.log',
      '--config.extra_args=--config.max_updates=2', processes=2,
  )  # fmt: skip
  try:
    rc = learner.wait(timeout=900)
    learner_s = time.monotonic() - t0
    # The worker stops by itself on the learner's done file.
    worker_rc = worker.wait(timeout=180)
  finally:
    for p in (learner, worker):
      if p.poll() is None:
        p.kill()
  return {
      'dir': r, 'tmp': tmp, 'rc': rc, 'worker_rc': worker_rc,
      'learner_s': learner_s,
      'log': (tmp / 'learner.log').read_text(errors='replace'),
      'worker_log': (tmp / 'rollout.log').read_text(errors='replace'),
  }  # fmt: skip


def test_two_learner_processes_and_a_rollout_worker(two_process_run):
  run = two_process_run
  r, log = run['dir'], run['log']
  assert run['rc'] == 0, log[-4000:]
  assert run['worker_rc'] == 0, run['worker_log'][-4000:]
  # One metrics row per update, written by process 0 alone.
  rows = rl_run.metrics(r)
  assert [(x['update'], x['policy_version']) for x in rows] == [(1, 1), (2, 2)]
  assert all(x['unrouted_rows'] == 0 for x in rows)
  assert len(list((r / 'tb').iterdir())) == 1
  manifest = json.loads((r / 'manifest.json').read_text())
  assert manifest['processes'] == 2 and manifest['role'] == 'learner'
  assert json.loads((r / 'parity.json').read_text())['ok']
  # Versions 0, 1 and 2 published once each (process 0 renames and logs).
  for v in (0, 1, 2):
    assert log.count(f'published weight version {v} ') == 1, v
  assert sorted(p.name for p in (r / 'weights').iterdir()) == ['0', '1', '2']
  stamps = {weight_sync.WeightStore(r / 'weights').stamp(v) for v in (0, 1, 2)}
  assert len(stamps) == 3 and '' not in stamps
  # Both processes took part in every collective step; one journal line per
  # update.
  assert '[p1]' in log and 'process 1 of 2' in log
  journal = (r / 'queue' / 'consumed.jsonl').read_text().splitlines()
  assert [json.loads(l)['update'] for l in journal] == [0, 1]
  # The worker (named after its host) loaded version 1 and sampled with it.
  assert 'sampler loaded weight version 1 ' in run['worker_log']
  trajs = [
      json.loads(l)
      for l in (r / 'rollouts-s0-h0.jsonl').read_text().splitlines()
  ]
  assert max(max(t['tokens']['versions']) for t in trajs) >= 1


@pytest.fixture(scope='module')
def one_process_fed(two_process_run, tmp_path_factory):
  """A 1-process learner (8 devices) fed the recorded run's groups, with
  rewards varied so the updates carry a gradient."""
  assert two_process_run['rc'] == 0
  tmp = tmp_path_factory.mktemp('one')
  b = tmp / 'B'
  feeder = replay_feed.Feeder(two_process_run['dir'], b, vary_rewards=True)
  feeder.start()
  learner = _learner_1proc(b, tmp / 'b.log', '--config.max_updates=2')
  try:
    rc = learner.wait(timeout=900)
  finally:
    feeder.stop.set()
    if learner.poll() is None:
      learner.kill()
  assert rc == 0, rl_run.log_tail(tmp / 'b.log')
  rows = rl_run.metrics(b)
  assert [r['update'] for r in rows] == [1, 2]
  assert all(r['grad_norm'] > 0 for r in rows)
  return rows


def test_two_processes_equal_one_and_a_killed_process_resumes(
    two_process_run, one_process_fed, tmp_path
):
  """2 learner processes fed the same groups as the 1-process learner:
  SIGKILL process 1 after checkpoint 1, launch.local stops process 0 in
  bounded time, the same command resumes at version 1; both updates' loss
  and grad norm equal the 1-process learner's."""
  c = tmp_path / 'C'
  feeder = replay_feed.Feeder(two_process_run['dir'], c, vary_rewards=True)
  feeder.start()
  args = '--config.extra_args=--config.max_updates=2'
  learner = _local('learner', c, tmp_path / 'c1.log', args, processes=2)
  try:
    deadline = time.monotonic() + 900
    while not (c / 'checkpoints' / '1').exists():
      assert learner.poll() is None, rl_run.log_tail(tmp_path / 'c1.log')
      assert time.monotonic() < deadline
      time.sleep(0.5)
    os.kill(_child_pid(learner.pid, worker=1), signal.SIGKILL)
    t0 = time.monotonic()
    rc = learner.wait(timeout=120)
    stop_s = time.monotonic() - t0
    killed_early = not (c / 'learner' / 'done.json').exists()
    assert rc != 0 or not killed_early
    assert stop_s < 60, stop_s
    if killed_early:
      learner = _local('learner', c, tmp_path / 'c2.log', args, processes=2)
      assert learner.wait(timeout=900) == 0, rl_run.log_tail(
          tmp_path / 'c2.log'
      )
      log = (tmp_path / 'c2.log').read_text(errors='replace')
      assert 'resumed at policy version 1' in log
  finally:
    feeder.stop.set()
    if learner.poll() is None:
      learner.kill()
  _assert_same_updates(rl_run.metrics(c), one_process_fed)


def _child_pid(parent: int, worker: int) -> int:
  """The pid of launch.local's process `worker` (TPU_WORKER_ID)."""
  out = subprocess.run(
      ['pgrep', '-P', str(parent)], capture_output=True, text=True, check=True
  ).stdout.split()
  for pid in out:
    env = pathlib.Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
    if f'TPU_WORKER_ID={worker}'.encode() in env:
      return int(pid)
  raise AssertionError(f'no process {worker} under {parent}: {out}')


def test_role_all_refuses_two_processes(tmp_path):
  out = io.StringIO()
  binary = spec_lib.Binary(
      module='search_agent.train.rl.run',
      flags={'config': 'tpu_configs/rl.py:tiny', 'role': 'all',
             'workdir': str(tmp_path / 'w')},
      env={'JAX_PLATFORMS': 'cpu'},
  )  # fmt: skip
  rc = processes_lib.run(
      binary, processes_lib.Layout(processes=2, devices=8, grace_s=5),
      cwd=REPO, out=out,
  )  # fmt: skip
  assert rc != 0
  assert 'runs on one host: it was started as 2 processes' in out.getvalue()
  assert not (tmp_path / 'w' / 'weights').exists()  # refused before work


def test_weights_published_by_two_processes_load_on_another_mesh(tmp_path):
  root = tmp_path / 'weights'
  binary = spec_lib.Binary(
      module='publish_hosts',
      flags={'root': str(root), 'mib': 1, 'versions': 2},
      env={'JAX_PLATFORMS': 'cpu', 'PYTHONPATH': str(REPO)},
  )
  out = io.StringIO()
  rc = processes_lib.run(
      binary, processes_lib.Layout(processes=2, devices=8, grace_s=5),
      cwd=HERE, out=out,
  )  # fmt: skip
  assert rc == 0, out.getvalue()[-4000:]
  text = out.getvalue()
  for v in (1, 2):
    assert text.count(f'published weight version {v} ') == 1
  store = weight_sync.WeightStore(root)
  assert store.versions() == [1, 2]
  assert not [p for p in root.iterdir() if p.name.startswith('.')]
  # Another mesh: 2 devices of this process, rows split 2 ways, not 8.
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ('x',))
  for v in (1, 2):
    want = publish_hosts.params(v, 1)
    like = {
        'w': jax.ShapeDtypeStruct(
            want['w'].shape, np.float32, sharding=NamedSharding(mesh, P('x'))
        ),
        'scale': jax.ShapeDtypeStruct(
            (), np.float32, sharding=NamedSharding(mesh, P())
        ),
    }
    got = store.load(v, like)
    np.testing.assert_array_equal(np.asarray(got['w']), want['w'])
    assert float(got['scale']) == v
    assert got['w'].sharding == like['w'].sharding
