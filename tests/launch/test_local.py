"""Tests of launch/local.py and launch/processes.py: the same binary and
flags, run locally as one process or as N joined on 127.0.0.1."""

import io
import json
import subprocess
import sys
import time

import pytest

from launch import processes as processes_lib
from launch import spec as spec_lib

_PULSE = """
import json, os, sys, time
flags = dict(a[2:].split('=', 1) for a in sys.argv[1:] if '=' in a)
flags['extra'] = [a for a in sys.argv[1:] if '=' not in a]
os.makedirs(flags['workdir'], exist_ok=True)
me = os.environ.get('TPU_WORKER_ID', '0')
env = {k: os.environ.get(k) for k in (
    'PULSE_ENV', 'TPU_WORKER_ID', 'TPU_WORKER_HOSTNAMES',
    'JAX_COORDINATOR_ADDRESS', 'XLA_FLAGS')}
with open(os.path.join(flags['workdir'], f'ran{me}.json'), 'w') as f:
  json.dump({'flags': flags, 'env': env}, f)
print('hello from', me, flush=True)
if me == flags.get('fail_on', ''):
  sys.exit(int(flags.get('exit', 0)))
if me == flags.get('hang_on', ''):
  time.sleep(600)
sys.exit(int(flags.get('exit', 0)) if 'fail_on' not in flags else 0)
"""


def _run(binary, cwd, processes=1, devices=8, out=None):
  return processes_lib.run(
      binary,
      processes_lib.Layout(processes=processes, devices=devices, grace_s=2),
      cwd=cwd,
      out=out or io.StringIO(),
  )


@pytest.fixture
def pulse_module(tmp_path, monkeypatch):
  (tmp_path / 'pulse_bin.py').write_text(_PULSE)
  monkeypatch.syspath_prepend(str(tmp_path))
  # Other tests' conftests set it.
  monkeypatch.delenv('XLA_FLAGS', raising=False)
  return tmp_path


def test_runs_the_binary_with_flags_and_env(pulse_module):
  workdir = pulse_module / 'work'
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={'workdir': str(workdir), 'steps': 2, 'verbose': True},
      env={'PULSE_ENV': 'set'},
      extra_args=('--quiet',),
  )
  assert _run(binary, pulse_module) == 0
  ran = json.loads((workdir / 'ran0.json').read_text())
  assert ran == {
      'flags': {
          'steps': '2',
          'verbose': 'true',
          'workdir': str(workdir),
          'extra': ['--quiet'],
      },
      'env': {
          'PULSE_ENV': 'set',
          'TPU_WORKER_ID': None,
          'TPU_WORKER_HOSTNAMES': None,
          'JAX_COORDINATOR_ADDRESS': None,
          'XLA_FLAGS': '--xla_force_host_platform_device_count=8',
      },
  }


def test_returns_the_binary_exit_status(pulse_module):
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={'workdir': str(pulse_module / 'w'), 'exit': 3},
      env={},
  )
  assert _run(binary, pulse_module) == 3


def test_processes_get_a_pods_environment_and_prefixed_logs(pulse_module):
  workdir = pulse_module / 'w'
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={'workdir': str(workdir)},
      env={'XLA_FLAGS': '--xla_force_host_platform_device_count=2 --xla_x=1'},
  )
  out = io.StringIO()
  assert _run(binary, pulse_module, processes=2, out=out) == 0
  envs = [
      json.loads((workdir / f'ran{i}.json').read_text())['env'] for i in (0, 1)
  ]
  assert [e['TPU_WORKER_ID'] for e in envs] == ['0', '1']
  assert {e['TPU_WORKER_HOSTNAMES'] for e in envs} == {'127.0.0.1,127.0.0.1'}
  coordinator = {e['JAX_COORDINATOR_ADDRESS'] for e in envs}
  assert len(coordinator) == 1 and coordinator.pop().startswith('127.0.0.1:')
  # The binary's own XLA flags stay; the device count is split evenly.
  assert {e['XLA_FLAGS'] for e in envs} == {
      '--xla_x=1 --xla_force_host_platform_device_count=4'
  }
  lines = out.getvalue().splitlines()
  assert '[p0] hello from 0' in lines and '[p1] hello from 1' in lines


def test_one_failed_process_stops_the_others(pulse_module):
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={
          'workdir': str(pulse_module / 'w'),
          'fail_on': '1',
          'hang_on': '0',
          'exit': 7,
      },
      env={},
  )
  out = io.StringIO()
  t0 = time.monotonic()
  assert _run(binary, pulse_module, processes=2, out=out) == 7
  assert time.monotonic() - t0 < 60  # process 0 would sleep 600 s
  assert '[launch] process 1 exited with 7' in out.getvalue()


def test_layout_refuses_an_uneven_device_split():
  with pytest.raises(spec_lib.LaunchError, match='split evenly'):
    processes_lib.Layout(processes=3, devices=8)
  with pytest.raises(spec_lib.LaunchError, match='>= 1'):
    processes_lib.Layout(processes=0)


def test_missing_module_fails_before_running():
  binary = spec_lib.Binary(
      module='search_agent.no_such_binary', flags={}, env={}
  )
  with pytest.raises(spec_lib.LaunchError, match='no_such_binary'):
    _run(binary, spec_lib.REPO)
  package = spec_lib.Binary(module='search_agent', flags={}, env={})
  with pytest.raises(spec_lib.LaunchError, match='__main__'):
    package.check_module()


def test_dry_run_prints_the_same_argv_as_xpk(repo_root):
  """Pulse test of the binary: local and xpk run the same command line."""
  out = subprocess.run(
      [
          sys.executable,
          '-m',
          'launch.local',
          '--config=tpu_configs/launch/sft.py:tiny',
          '--config.extra_args=--config.total_updates=2',
          '--dry_run',
      ],
      cwd=repo_root,
      capture_output=True,
      text=True,
      check=True,
  ).stdout.split()
  assert out == [
      'DECOUPLE_GCLOUD=TRUE',
      'JAX_PLATFORMS=cpu',
      'XLA_FLAGS=--xla_force_host_platform_device_count=8',
      sys.executable,
      '-m',
      'search_agent.train.sft',
      '--config=tpu_configs/sft.py:pretrain_tiny,pod',
      '--workdir=runs/sft-tiny',
      '--config.total_updates=2',
  ]


def test_pulse_runs_a_real_binary(repo_root, tmp_path):
  """`launch.local` runs the RL scheduler simulator (tiny) end to end."""
  workdir = tmp_path / 'sim'
  proc = subprocess.run(
      [
          sys.executable,
          '-m',
          'launch.local',
          '--config=tpu_configs/launch/rl.py:tiny',
          f'--config.flags.workdir={workdir}',
      ],
      cwd=repo_root,
      capture_output=True,
      text=True,
      timeout=300,
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  report = json.loads((workdir / 'simulation.json').read_text())
  assert report  # the simulator's own output, written where we said


def test_dry_run_prints_every_processs_environment(repo_root):
  """--processes=2 --dry_run: one line per process, each with its own id."""
  out = subprocess.run(
      [
          sys.executable,
          '-m',
          'launch.local',
          '--config=tpu_configs/launch/sft.py:tiny',
          '--processes=2',
          '--dry_run',
      ],
      cwd=repo_root,
      capture_output=True,
      text=True,
      check=True,
  ).stdout.splitlines()
  assert len(out) == 2
  for i, line in enumerate(out):
    words = line.split()
    assert f'TPU_WORKER_ID={i}' in words
    assert 'TPU_WORKER_HOSTNAMES=127.0.0.1,127.0.0.1' in words
    assert 'XLA_FLAGS=--xla_force_host_platform_device_count=4' in words
    assert any(
        w.startswith('JAX_COORDINATOR_ADDRESS=127.0.0.1:') for w in words
    )
    assert '--config=tpu_configs/sft.py:pretrain_tiny,pod' in words
