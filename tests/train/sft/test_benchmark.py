"""Pulse test of the SFT benchmark binary (ours vs MaxText's train.main)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def test_benchmark_pulse(tmp_path, repo_root):
  env = dict(os.environ)
  env.update(
      XLA_FLAGS='--xla_force_host_platform_device_count=1',
      JAX_PLATFORMS='cpu',
      DECOUPLE_GCLOUD='TRUE',
  )
  cmd = [
      sys.executable,
      '-m',
      'search_agent.train.sft.benchmark',
      '--seq_len=64',
      '--rows=2',
      '--steps=1',
      f'--workdir={tmp_path}',
  ]
  proc = subprocess.run(
      cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=600
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout[proc.stdout.index('{') :])
  assert report['devices'] == 1 and report['tokens_per_update'] == 128
  for name in ('before', 'after', 'after_adamw', 'maxtext_adamw'):
    assert report[name]['update_s'] > 0 and report[name]['tokens_per_s'] > 0
    assert 0 < report[name]['share_of_peak'] < 1
  assert report['ours_adamw_over_maxtext_tokens_per_s'] == pytest.approx(
      report['maxtext_adamw']['update_s'] / report['after_adamw']['update_s']
  )
