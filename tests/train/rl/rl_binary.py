"""Runs the RL binary on a tiny variant as a real process, for the tests
of what a whole run trains (`rl.py:tiny,long`, `:tiny,warm`)."""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]


def run(tmp_path: pathlib.Path, variant: str, updates: int) -> pathlib.Path:
  """`python -m search_agent.train.rl.run --config=tpu_configs/rl.py:VARIANT
  --config.max_updates=UPDATES` in tmp_path/run; asserts it exits 0 (the
  log's tail in the message) and returns the workdir."""
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  with open(log, 'wb') as out:
    proc = subprocess.run(
        [
            sys.executable,
            '-m',
            'search_agent.train.rl.run',
            f'--config=tpu_configs/rl.py:{variant}',
            f'--workdir={workdir}',
            f'--config.max_updates={updates}',
        ],
        cwd=REPO,
        env=dict(os.environ),
        stdout=out,
        stderr=subprocess.STDOUT,
        timeout=1500,
        check=False,
    )
  assert proc.returncode == 0, log.read_text(errors='replace')[-3000:]
  return workdir
