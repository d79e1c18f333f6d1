"""Tests of launch/local.py: the same binary and flags, run locally."""

import json
import subprocess
import sys

import pytest

from launch import spec as spec_lib

_PULSE = """
import json, os, sys
flags = dict(a[2:].split('=', 1) for a in sys.argv[1:] if '=' in a)
flags['extra'] = [a for a in sys.argv[1:] if '=' not in a]
os.makedirs(flags['workdir'], exist_ok=True)
with open(os.path.join(flags['workdir'], 'ran.json'), 'w') as f:
  json.dump({'flags': flags, 'env': os.environ.get('PULSE_ENV')}, f)
sys.exit(int(flags.get('exit', 0)))
"""


@pytest.fixture
def pulse_module(tmp_path, monkeypatch):
  (tmp_path / 'pulse_bin.py').write_text(_PULSE)
  monkeypatch.syspath_prepend(str(tmp_path))
  return tmp_path


def test_runs_the_binary_with_flags_and_env(pulse_module):
  workdir = pulse_module / 'work'
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={'workdir': str(workdir), 'steps': 2, 'verbose': True},
      env={'PULSE_ENV': 'set'},
      extra_args=('--quiet',),
  )
  assert spec_lib.run_local(binary, cwd=pulse_module) == 0
  ran = json.loads((workdir / 'ran.json').read_text())
  assert ran == {
      'flags': {
          'steps': '2',
          'verbose': 'true',
          'workdir': str(workdir),
          'extra': ['--quiet'],
      },
      'env': 'set',
  }


def test_returns_the_binary_exit_status(pulse_module):
  binary = spec_lib.Binary(
      module='pulse_bin',
      flags={'workdir': str(pulse_module / 'w'), 'exit': 3},
      env={},
  )
  assert spec_lib.run_local(binary, cwd=pulse_module) == 3


def test_missing_module_fails_before_running():
  binary = spec_lib.Binary(
      module='search_agent.no_such_binary', flags={}, env={}
  )
  with pytest.raises(spec_lib.LaunchError, match='no_such_binary'):
    spec_lib.run_local(binary)
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
      sys.executable,
      '-m',
      'search_agent.train.sft',
      '--config=tpu_configs/sft.py:tiny',
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
