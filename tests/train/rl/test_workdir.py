"""rl.run refuses an object-store workdir up front, with one clear line."""

import subprocess
import sys


def test_gs_workdir_is_refused_before_anything_is_written(repo_root, tmp_path):
  proc = subprocess.run(
      [
          sys.executable, '-m', 'search_agent.train.rl.run',
          f'--config={repo_root}/tpu_configs/rl.py:tiny',
          '--workdir=gs://bucket/rl/run0', '--config.max_updates=1',
      ],
      cwd=tmp_path, capture_output=True, text=True, timeout=300,
      env={'JAX_PLATFORMS': 'cpu', 'PATH': '/usr/bin:/bin',
           'PYTHONPATH': str(repo_root)},
  )  # fmt: skip
  assert proc.returncode == 1, proc.stderr[-2000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith('rl.run: the RL workdir must be on a local'), last
  assert 'gs://bucket/rl/run0' in last and 'Filestore' in last
  # Before the fix the path was mangled into ./gs:/bucket/... and training
  # started there.
  assert list(tmp_path.iterdir()) == []
