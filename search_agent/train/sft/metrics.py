"""Training metrics: one JSON line per record, TensorBoard scalars, progress.

`metrics.jsonl` in the workdir gets {'step', 'split', ...scalars} per record;
TensorBoard event files go to `workdir/tb` (tensorboardX); a progress line is
logged with absl. On resume from update s, `MetricsWriter(..., resume_step=s)`
first rolls the file back to the records of steps <= s (`rollback`), so the
updates between the last checkpoint and a kill are not listed twice, and
TensorBoard purges its events past s.

The workdir may be an object store (`gs://...`, see `search_agent.paths`):
objects cannot be appended, so there metrics.jsonl is rewritten whole on
every record (one upload, atomic), and TensorBoard writes to a local
directory whose event files are uploaded to `workdir/tb` after each flush.

Several processes: only process 0 writes (`make_writer`); the others log the
same progress lines to their own logs.
"""

import json
import os
import tempfile
import time
from typing import Mapping

from absl import logging
import tensorboardX

from search_agent import distributed
from search_agent import paths


def make_writer(workdir: str, total_steps: int, resume_step: int = 0):
  """A MetricsWriter on process 0; a LogWriter on the others."""
  if distributed.is_writer():
    return MetricsWriter(workdir, total_steps, resume_step)
  return LogWriter(total_steps)


class LogWriter:
  """Logs progress lines only (the processes other than the writer)."""

  def __init__(self, total_steps: int):
    self._total = total_steps
    self._t0 = time.monotonic()

  def write(self, step: int, split: str, scalars: Mapping[str, float]):
    _log(split, step, self._total, time.monotonic() - self._t0, scalars)

  def close(self):
    pass


def _log(split, step, total, elapsed, scalars) -> None:
  shown = ' '.join(f'{k}={float(v):.4g}' for k, v in sorted(scalars.items()))
  logging.info(
      '[%s] step %d/%d (%.0f%%, %.1fs) %s',
      split,
      step,
      total,
      100.0 * step / max(total, 1),
      elapsed,
      shown,
  )


class MetricsWriter:
  """Writes scalar metrics to JSONL, TensorBoard and the log."""

  def __init__(self, workdir: str, total_steps: int, resume_step: int = 0):
    paths.path(workdir).mkdir(parents=True, exist_ok=True)
    self.path = paths.join(workdir, 'metrics.jsonl')
    dropped = rollback(self.path, resume_step)
    if dropped:
      logging.info(
          'metrics.jsonl: dropped %d records past update %d',
          dropped,
          resume_step,
      )
    self._local = paths.is_local(workdir)
    # On an object store: the file's lines, rewritten whole on each record.
    self._lines = None if self._local else _read_lines(self.path)
    self._tb_remote = None if self._local else paths.path(workdir) / 'tb'
    tb_dir = (
        paths.join(workdir, 'tb') if self._local else tempfile.mkdtemp('-tb')
    )
    self._tb_dir = tb_dir
    self._tb = tensorboardX.SummaryWriter(tb_dir, purge_step=resume_step + 1)
    self._total = total_steps
    self._t0 = time.monotonic()

  def write(self, step: int, split: str, scalars: Mapping[str, float]):
    record = {'step': step, 'split': split}
    record.update({k: float(v) for k, v in scalars.items()})
    line = json.dumps(record) + '\n'
    if self._local:
      with open(self.path, 'a', encoding='utf-8') as f:
        f.write(line)
    else:
      self._lines.append(line)
      paths.write_atomic(self.path, ''.join(self._lines))
    for k, v in scalars.items():
      self._tb.add_scalar(f'{split}/{k}', float(v), step)
    self._tb.flush()
    self._upload_tb()
    _log(split, step, self._total, time.monotonic() - self._t0, scalars)

  def _upload_tb(self):
    """Copies the local event files to the object-store workdir's tb/."""
    if self._tb_remote is None:
      return
    for name in os.listdir(self._tb_dir):
      with open(os.path.join(self._tb_dir, name), 'rb') as f:
        paths.write_atomic(self._tb_remote / name, f.read())

  def close(self):
    self._tb.close()
    self._upload_tb()


def _read_lines(path: str) -> list[str]:
  """The file's lines (with their newline), [] when it does not exist."""
  p = paths.path(path)
  if not p.exists():
    return []
  return [l for l in p.read_bytes().decode('utf-8', 'replace').splitlines(True)]


def _parse(line: str):
  try:
    record = json.loads(line)
  except json.JSONDecodeError:
    return None
  return record if isinstance(record, dict) else None


def rollback(path: str, step: int) -> int:
  """Keeps only the records of steps <= `step` in a metrics.jsonl file.

  Rewrites with `paths.write_atomic` (local: temporary file, fsync and atomic
  rename; object store: one upload), so a kill during the rollback leaves
  either the old or the new file. A torn last line (a kill mid-write) is
  dropped too.

  Args:
    path: The metrics.jsonl file; nothing happens when it does not exist.
    step: The restored update; 0 for a run that starts from scratch.

  Returns:
    How many lines were dropped.
  """
  kept, dropped = [], 0
  for line in _read_lines(path):
    if not line.strip():
      continue
    record = _parse(line)
    if record is None or record.get('step', 0) > step:
      dropped += 1
    else:
      kept.append(json.dumps(record) + '\n')
  if dropped:
    paths.write_atomic(path, ''.join(kept))
  return dropped


def read_metrics(path: str, split: str = 'train') -> list[dict]:
  """The records of one split from a metrics.jsonl file, in order."""
  rows = [json.loads(line) for line in _read_lines(path) if line.strip()]
  return [r for r in rows if r['split'] == split]
