"""The SFT binary as 2 real processes x 4 CPU devices (launch.local), against
1 process x 8 devices: the same losses and validation figures, one writer,
and a SIGKILL of one process that stops the other and resumes to the
uninterrupted run's losses. Validation runs after every checkpoint, where
orbax's own threads once crossed the evaluation's collectives.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from search_agent.train.sft import metrics as metrics_lib

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

UPDATES = 6


def _cmd(workdir, processes):
  return [
      sys.executable,
      '-m',
      'launch.local',
      '--config=tpu_configs/launch/sft.py:tiny',
      f'--processes={processes}',
      f'--config.flags.workdir={workdir}',
      f'--config.extra_args=--config.total_updates={UPDATES}'
      ' --config.checkpoint.every=2 --config.eval_every=2',
  ]


# tests/train/sft/conftest.py turns XLA:CPU's concurrency-optimized
# scheduler off for this process's 8-device tests. With it off, the two
# processes' evaluation steps pair different collectives (gloo: "Received
# data size doesn't match expected size ... 65536 vs 1024", on every run
# tried), so the binaries run with XLA's default schedule, as users run them.
_SEQUENTIAL = '--xla_cpu_enable_concurrency_optimized_scheduler=false'


def _env():
  flags = os.environ.get('XLA_FLAGS', '').replace(_SEQUENTIAL, '').split()
  return dict(os.environ, JAX_PLATFORMS='cpu', XLA_FLAGS=' '.join(flags))


def _start(repo_root, workdir, processes):
  return subprocess.Popen(
      _cmd(workdir, processes),
      cwd=repo_root,
      env=_env(),
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
  )


def _why(out: str) -> str:
  """The error lines of a run's output (its end is stack dumps)."""
  lines = out.splitlines()
  keys = ('Error', '] E1', '] F1', 'exited', 'Check failed', 'Fatal', 'gloo')
  errors = [l for l in lines if any(k in l for k in keys)]
  return '\n'.join(errors[-30:])


def _run(repo_root, workdir, processes):
  proc = _start(repo_root, workdir, processes)
  out, _ = proc.communicate(timeout=900)
  (workdir.parent / f'{workdir.name}.log').write_text(out)
  assert proc.returncode == 0, _why(out)
  return out


def _train_rows(workdir):
  return metrics_lib.read_metrics(str(workdir / 'metrics.jsonl'), 'train')


def _assert_same_losses(got, want):
  assert [r['step'] for r in got] == list(range(1, UPDATES + 1))
  for g, w in zip(got, want):
    for key in ('nll', 'grad_norm'):
      assert g[key] == pytest.approx(w[key], rel=1e-5), (g['step'], key)
    assert g['tokens'] == w['tokens']


def _val_rows(workdir):
  return metrics_lib.read_metrics(str(workdir / 'metrics.jsonl'), 'val')


@pytest.fixture(scope='module')
def one_process(repo_root, tmp_path_factory):
  workdir = tmp_path_factory.mktemp('one')
  _run(repo_root, workdir, 1)
  return workdir


def test_two_processes_train_as_one_with_one_writer(
    repo_root, tmp_path, one_process
):
  workdir = tmp_path / 'two'
  out = _run(repo_root, workdir, 2)
  rows = _train_rows(workdir)
  _assert_same_losses(rows, _train_rows(one_process))
  val, want = _val_rows(workdir), _val_rows(one_process)
  assert [r['step'] for r in val] == [2, 4, 6]
  assert [r['step'] for r in want] == [2, 4, 6]
  for g, w in zip(val, want):
    for key in ('nll', 'copy_nll'):
      assert g[key] == pytest.approx(w[key], rel=1e-5), (g['step'], key)
  # One writer: one row per update, one TensorBoard file, one data record.
  lines = (workdir / 'metrics.jsonl').read_text().splitlines()
  assert len(lines) == len(
      {(json.loads(l)['step'], json.loads(l)['split']) for l in lines}
  )
  assert len(os.listdir(workdir / 'tb')) == 1
  # tokens/s counts the global batch: both processes log the same figure
  # within timing noise, and it is not half the tokens.
  assert all(r['tokens_per_s'] > 0 for r in rows)
  assert '[p1]' in out and 'process 1 of 2' in out


def test_sigkill_of_one_process_stops_the_other_and_resumes(
    repo_root, tmp_path, one_process
):
  workdir = tmp_path / 'killed'
  proc = _start(repo_root, workdir, 2)
  lines, pid = [], None
  deadline = time.monotonic() + 600
  while not (workdir / 'checkpoints' / '2').is_dir():
    assert time.monotonic() < deadline, ''.join(lines)[-3000:]
    line = proc.stdout.readline()
    lines.append(line)
    if m := re.match(r'\[launch\] process 1 pid (\d+)', line):
      pid = int(m.group(1))
    assert proc.poll() is None, ''.join(lines)[-3000:]
  assert pid is not None
  os.kill(pid, signal.SIGKILL)
  killed_at = time.monotonic()
  out, _ = proc.communicate(timeout=120)
  # The launcher notices within its grace period and stops process 0.
  assert time.monotonic() - killed_at < 60
  assert proc.returncode != 0, out[-3000:]
  # The launcher reaps process 1 first and stops process 0 (which may also
  # have failed on its own, in a collective that lost its peer).
  assert 'process 1 exited with -9' in out, _why(out)
  done = len(_train_rows(workdir))
  assert done < UPDATES  # killed mid-run
  out = _run(repo_root, workdir, 2)
  assert 'resumed from update' in out
  _assert_same_losses(_train_rows(workdir), _train_rows(one_process))
