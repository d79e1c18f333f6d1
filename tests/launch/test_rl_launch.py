"""The RL launch configs: the environment and command every process gets."""

import importlib.util
import shlex
import subprocess
import sys

from launch import spec as spec_lib


def _load(repo_root, arg):
  path = repo_root / 'tpu_configs' / 'launch' / 'rl.py'
  spec = importlib.util.spec_from_file_location('launch_rl', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config(arg)


def _dry_run(repo_root, arg, *args):
  out = subprocess.run(
      [sys.executable, '-m', 'launch.local',
       f'--config=tpu_configs/launch/rl.py:{arg}', '--dry_run', *args],
      cwd=repo_root, capture_output=True, text=True, check=True,
  ).stdout  # fmt: skip
  lines = []
  for line in out.splitlines():
    words = shlex.split(line)
    env = dict(w.split('=', 1) for w in words if '=' in w and w[0].isupper())
    lines.append((env, [w for w in words if not ('=' in w and w[0].isupper())]))
  return lines


def test_tiny_learner_runs_as_one_program_over_two_processes(repo_root):
  procs = _dry_run(
      repo_root, 'tiny_learner', '--processes=2',
      '--config.extra_args=--config.max_updates=2',
  )  # fmt: skip
  assert len(procs) == 2
  for i, (env, argv) in enumerate(procs):
    assert env['TPU_WORKER_ID'] == str(i)
    assert env['TPU_WORKER_HOSTNAMES'] == '127.0.0.1,127.0.0.1'
    assert env['JAX_COORDINATOR_ADDRESS'].startswith('127.0.0.1:')
    assert env['JAX_PLATFORMS'] == 'cpu'
    assert env['XLA_FLAGS'] == '--xla_force_host_platform_device_count=4'
    assert argv[1:] == [
        '-m', 'search_agent.train.rl.run', '--config=tpu_configs/rl.py:tiny',
        '--role=learner', '--workdir=runs/rl-tiny', '--config.max_updates=2',
    ]  # fmt: skip


def test_tiny_rollout_is_one_process_on_all_its_devices(repo_root):
  ((env, argv),) = _dry_run(repo_root, 'tiny_rollout')
  assert 'TPU_WORKER_ID' not in env and 'JAX_COORDINATOR_ADDRESS' not in env
  assert env['XLA_FLAGS'] == '--xla_force_host_platform_device_count=8'
  assert '--role=rollout' in argv and '--workdir=runs/rl-tiny' in argv


def test_pod_rollout_hosts_sample_alone_and_the_learner_joins(repo_root):
  rollout = spec_lib.binary_from_config(_load(repo_root, 'rollout'))
  learner = spec_lib.binary_from_config(_load(repo_root, 'learner'))
  # Each rollout host: its own 2x2x1 chips, no slice-wide TPU program.
  assert rollout.env['TPU_PROCESS_BOUNDS'] == '1,1,1'
  assert rollout.env['TPU_CHIPS_PER_PROCESS_BOUNDS'] == '2,2,1'
  assert 'TPU_PROCESS_BOUNDS' not in learner.env
  assert '--role=rollout' in rollout.argv() and '--role=learner' in (
      learner.argv()
  )
  # No worker_id flag: every host names itself s<slice>-h<worker>.
  assert not any('worker_id' in a for a in rollout.argv())
  for arg in ('tiny_learner', 'tiny_rollout'):
    xpk = spec_lib.xpk_from_config(_load(repo_root, arg))
    assert xpk.workload == 'rl-' + arg.replace('_', '-')
