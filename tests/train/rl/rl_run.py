"""Helpers of the RL binary's process tests: a small run, its invariants."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]

# tpu_configs/rl.py:tiny made smaller still: groups of 2 rollouts, 2 groups
# an update, one agent step of 8 tokens.
SMALL = [
    '--config=tpu_configs/rl.py:tiny',
    '--config.group_size=2',
    '--config.scheduler.groups_per_update=2',
    '--config.scheduler.start_after_ready=1',
    '--config.scheduler.dispatch_batch_groups=2',
    '--config.scheduler.admission_window=2',
    '--config.rollout.max_agent_steps=1',
    '--config.rollout.max_tokens_per_call=8',
    '--config.rollout.min_output_tokens=4',
    '--config.sampler.max_new_tokens=8',
    '--config.sampler.batch_size=4',
    '--config.rollout.max_groups=2',
    '--config.learner.microbatch_size=2',
    '--config.learner.stall_timeout_s=400',
]


def start(workdir, *args, devices=None, log=None):
  """Starts the binary; returns the Popen (stdout+stderr to `log`)."""
  env = dict(os.environ)
  if devices:
    env['XLA_FLAGS'] = f'--xla_force_host_platform_device_count={devices}'
  out = open(log, 'ab') if log else subprocess.DEVNULL  # pylint: disable=consider-using-with
  return subprocess.Popen(
      [sys.executable, '-m', 'search_agent.train.rl.run', *SMALL,
       f'--workdir={workdir}', *args],
      cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
  )  # fmt: skip


def metrics(workdir) -> list[dict]:
  path = pathlib.Path(workdir) / 'metrics.jsonl'
  if not path.exists():
    return []
  return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def log_tail(log, n=3000) -> str:
  return pathlib.Path(log).read_text(errors='replace')[-n:]
