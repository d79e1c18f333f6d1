"""Tests of launch/xpk.py and launch/spec.py: the xpk command from a config."""

import importlib.util
import shlex
import subprocess
import sys

import pytest

from launch import spec as spec_lib

# The golden command of tpu_configs/launch/sft.py (default variant, v5p-256).
GOLDEN_SFT = [
    'xpk',
    'workload',
    'create',
    '--cluster=search-agent-v5p',
    '--workload=sft-v5p-256',
    '--tpu-type=v5p-256',
    '--num-slices=1',
    '--docker-image=gcr.io/search-agent/search-agent:latest',
    '--priority=medium',
    '--max-restarts=3',
    '--restart-on-user-code-failure',
    '--env=DECOUPLE_GCLOUD=TRUE',
    '--command=python -m search_agent.train.sft --config=tpu_configs/sft.py'
    ' --workdir=gs://search-agent-runs/sft/run0',
]


def _load(repo_root, name, arg=None):
  """Imports a launch config file and returns get_config(arg)."""
  path = repo_root / 'tpu_configs' / 'launch' / f'{name}.py'
  spec = importlib.util.spec_from_file_location(f'launch_cfg_{name}', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config(arg)


def _command(config):
  return spec_lib.xpk_command(
      spec_lib.binary_from_config(config), spec_lib.xpk_from_config(config)
  )


def test_golden_sft_command(repo_root):
  assert _command(_load(repo_root, 'sft')) == GOLDEN_SFT


def test_dry_run_prints_the_golden_command(repo_root):
  """Pulse test: the binary itself, as a user runs it."""
  out = subprocess.run(
      [
          sys.executable,
          '-m',
          'launch.xpk',
          '--config=tpu_configs/launch/sft.py',
          '--config.flags.workdir=gs://bucket/run 1',
          '--config.xpk.project=my-proj',
          '--dry_run',
      ],
      cwd=repo_root,
      capture_output=True,
      text=True,
      check=True,
  ).stdout
  want = GOLDEN_SFT[:-2] + ['--project=my-proj'] + GOLDEN_SFT[-2:]
  want[-1] = want[-1].replace(
      '--workdir=gs://search-agent-runs/sft/run0',
      "'--workdir=gs://bucket/run 1'",
  )
  assert shlex.split(out) == want


def test_restarts_resume_after_a_crash_in_our_code(repo_root):
  """xpk restarts user-code failures only with the explicit flag."""
  for name, arg in (('sft', None), ('rl', 'learner'), ('rl', 'rollout')):
    config = _load(repo_root, name, arg)
    cmd = _command(config)
    assert '--max-restarts=3' in cmd
    assert '--restart-on-user-code-failure' in cmd, (name, arg)
  config = _load(repo_root, 'sft')
  config.xpk.restart_on_user_code_failure = False
  assert '--restart-on-user-code-failure' not in _command(config)


def test_rl_roles_get_their_own_workloads(repo_root):
  learner = _command(_load(repo_root, 'rl', 'learner'))
  rollout = _command(_load(repo_root, 'rl', 'rollout'))
  search = _command(_load(repo_root, 'rl', 'search'))
  assert '--tpu-type=v5p-256' in learner and '--workload=rl-learner' in learner
  assert '--num-slices=2' in rollout and '--tpu-type=v5p-64' in rollout
  assert '--device-type=n2-standard-32-1' in search
  assert not any(a.startswith('--tpu-type') for a in search)
  assert search[-1] == (
      '--command=python -m index.serve --config=tpu_configs/search/serve.py'
      ' --workdir=gs://search-agent-runs/search/run0'
  )
  # Learner and workers share the replay queue: a Filestore mount, not gs://.
  assert learner[-1].endswith('--role=learner --workdir=/rl/run0')
  assert rollout[-1].endswith('--role=rollout --workdir=/rl/run0')


def test_v5p_128_halves_context_parallelism(repo_root):
  cmd = _command(_load(repo_root, 'sft', 'v5p-128'))
  assert '--tpu-type=v5p-128' in cmd
  assert cmd[-1] == (
      '--command=python -m search_agent.train.sft --config=tpu_configs/sft.py'
      ' --workdir=gs://search-agent-runs/sft/run0 --config.layout.context=4'
  )


def test_every_variant_builds(repo_root):
  for name, args in (
      ('sft', (None, 'v5p-128', 'tiny')),
      ('rl', ('learner', 'rollout', 'search', 'simulate', 'tiny')),
  ):
    for arg in args:
      cmd = _command(_load(repo_root, name, arg))
      assert cmd[:3] == ['xpk', 'workload', 'create']
  with pytest.raises(ValueError, match='unknown variant'):
    _load(repo_root, 'sft', 'v4-8')


@pytest.mark.parametrize(
    'change, match',
    [
        ({'workload': 'SFT_run'}, 'workload name'),
        ({'workload': 'a' * 41}, 'at most 40'),
        ({'device_type': 'n2-standard-32-1'}, 'exactly one'),
        ({'tpu_type': ''}, 'exactly one'),
        ({'num_slices': 0}, 'num_slices'),
        ({'priority': 'urgent'}, 'priority'),
        ({'docker_image': ''}, 'docker_image'),
    ],
)
def test_invalid_targets_are_rejected(change, match):
  fields = dict(cluster='c', workload='w', tpu_type='v5p-8', docker_image='img')
  with pytest.raises(spec_lib.LaunchError, match=match):
    spec_lib.XpkTarget(**{**fields, **change})


def test_real_launch_refuses_a_missing_binary(repo_root):
  proc = subprocess.run(
      [
          sys.executable,
          '-m',
          'launch.xpk',
          '--config=tpu_configs/launch/sft.py',
          '--config.module=search_agent.no_such_binary',
      ],
      cwd=repo_root,
      capture_output=True,
      text=True,
  )
  assert proc.returncode != 0
  assert 'no_such_binary' in proc.stderr and 'LaunchError' in proc.stderr
