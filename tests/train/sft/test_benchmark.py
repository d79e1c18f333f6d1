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
      '--steps=1',
      f'--workdir={tmp_path}',
  ]
  proc = subprocess.run(
      cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=600
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout[proc.stdout.index('{') :])
  assert report['devices'] == 1 and report['tokens_per_step'] == 64
  for key in ('ours_adamw_s', 'ours_muon_s', 'maxtext_adamw_s'):
    assert report[key] > 0
  assert report['ratio_ours_over_maxtext'] == pytest.approx(
      report['ours_adamw_s'] / report['maxtext_adamw_s']
  )
