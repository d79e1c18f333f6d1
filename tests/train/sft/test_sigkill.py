"""SIGKILL the real SFT binary during an orbax save and between a metrics
commit and its checkpoint; the same command, run again, must lose and repeat
nothing: metrics rows, updates and data position as in an uninterrupted run.
"""

import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from search_agent.train.sft import metrics as metrics_lib

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

WORKER = pathlib.Path(__file__).with_name('sft_kill_worker.py')


def _cmd(repo_root, workdir, sft_jsonl, tokenizer_dir):
  return [
      sys.executable,
      str(WORKER),
      f'--config={repo_root}/tpu_configs/sft.py:tiny',
      f'--workdir={workdir}',
      '--config.total_updates=6',
      '--config.schedule.total_steps=6',
      '--config.checkpoint.every=2',
      '--config.eval_every=2',
      f'--config.data.train_path={sft_jsonl}',
      f'--config.data.val_path={sft_jsonl}',
      '--config.data.format=trajectory',
      '--config.data.train_lines=(0, 20)',
      '--config.data.val_lines=(20, 22)',
      '--config.data.seq_len=512',
      '--config.model.max_target_length=512',
      '--config.model.logits_chunk=128',
      f'--config.tokenizer_path={tokenizer_dir}',
  ]


def _start(cmd, repo_root, kill_dir, points):
  env = dict(os.environ, PYTHONPATH=str(repo_root), JAX_PLATFORMS='cpu')
  env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=1'
  env.update(SFT_KILL_POINTS=points, SFT_KILL_DIR=str(kill_dir))
  return subprocess.Popen(
      cmd,
      cwd=repo_root,
      env=env,
      stdout=subprocess.DEVNULL,
      stderr=subprocess.PIPE,
      text=True,
  )


def _kill_at(proc, marker, timeout=300):
  end = time.monotonic() + timeout
  while not marker.exists():
    if proc.poll() is not None:
      raise AssertionError(f'exited {proc.returncode}: {proc.stderr.read()}')
    assert time.monotonic() < end, f'{marker.name} never reached'
    time.sleep(0.05)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait(timeout=60) == -signal.SIGKILL


def _finish(proc):
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-3000:]


def test_sigkill_in_save_and_before_checkpoint_loses_nothing(
    tmp_path, repo_root, sft_jsonl, tiny_tokenizer_dir
):
  points = 'save_finalize:2,before_save:4'
  straight = tmp_path / 'straight'
  _finish(
      _start(
          _cmd(repo_root, straight, sft_jsonl, tiny_tokenizer_dir),
          repo_root,
          tmp_path,
          '',
      )
  )
  work = tmp_path / 'killed'
  cmd = _cmd(repo_root, work, sft_jsonl, tiny_tokenizer_dir)
  # 1: killed inside orbax's save of checkpoint 2 (written, not published).
  _kill_at(
      _start(cmd, repo_root, tmp_path, points),
      tmp_path / 'paused-save_finalize',
  )
  assert not (work / 'checkpoints' / '2').exists()
  # orbax's temporary directory of step 2 holds the written state.
  (tmp_dir,) = [
      p for p in (work / 'checkpoints').iterdir() if p.name.startswith('2.')
  ]
  assert list(tmp_dir.rglob('*'))
  rows = metrics_lib.read_metrics(str(work / 'metrics.jsonl'))
  assert [r['step'] for r in rows] == [1, 2]
  # 2: the same command starts over (no checkpoint), and is killed after
  # update 4's metrics rows, before checkpoint 4.
  _kill_at(
      _start(cmd, repo_root, tmp_path, points), tmp_path / 'paused-before_save'
  )
  rows = metrics_lib.read_metrics(str(work / 'metrics.jsonl'))
  assert [r['step'] for r in rows] == [1, 2, 3, 4]
  assert (work / 'checkpoints' / '2').is_dir()
  assert not (work / 'checkpoints' / '4').exists()
  # 3: the same command resumes from checkpoint 2 and finishes.
  _finish(_start(cmd, repo_root, tmp_path, points))

  path, want_path = str(work / 'metrics.jsonl'), str(straight / 'metrics.jsonl')
  want, got = metrics_lib.read_metrics(want_path), metrics_lib.read_metrics(
      path
  )
  assert (
      [r['step'] for r in got] == [r['step'] for r in want] == list(range(1, 7))
  )
  # The same batches (data position) and the same updates.
  assert [r['tokens'] for r in got] == [r['tokens'] for r in want]
  np.testing.assert_allclose(
      [r['nll'] for r in got], [r['nll'] for r in want], rtol=1e-5
  )
  val = metrics_lib.read_metrics(path, 'val')
  assert [r['step'] for r in val] == [2, 4, 6]
  np.testing.assert_allclose(
      [r['nll'] for r in val],
      [r['nll'] for r in metrics_lib.read_metrics(want_path, 'val')],
      rtol=1e-5,
  )
  assert len(metrics_lib.read_metrics(path, 'data')) == 1
  steps = sorted(
      int(p.name) for p in (work / 'checkpoints').iterdir() if p.name.isdigit()
  )
  assert steps[-1] == 6
