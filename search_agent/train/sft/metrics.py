"""Training metrics: one JSON line per record, TensorBoard scalars, progress.

`metrics.jsonl` in the workdir gets {'step', 'split', ...scalars} per record;
TensorBoard event files go to `workdir/tb` (tensorboardX); a progress line is
logged with absl. On resume from update s, `MetricsWriter(..., resume_step=s)`
first rolls the file back to the records of steps <= s (`rollback`), so the
updates between the last checkpoint and a kill are not listed twice, and
TensorBoard purges its events past s.
"""

import json
import os
import time
from typing import Mapping

from absl import logging
import tensorboardX

from search_agent.agent import trajectory


class MetricsWriter:
  """Writes scalar metrics to JSONL, TensorBoard and the log."""

  def __init__(self, workdir: str, total_steps: int, resume_step: int = 0):
    os.makedirs(workdir, exist_ok=True)
    self.path = os.path.join(workdir, 'metrics.jsonl')
    dropped = rollback(self.path, resume_step)
    if dropped:
      logging.info(
          'metrics.jsonl: dropped %d records past update %d',
          dropped,
          resume_step,
      )
    self._tb = tensorboardX.SummaryWriter(
        os.path.join(workdir, 'tb'), purge_step=resume_step + 1
    )
    self._total = total_steps
    self._t0 = time.monotonic()

  def write(self, step: int, split: str, scalars: Mapping[str, float]):
    record = {'step': step, 'split': split}
    record.update({k: float(v) for k, v in scalars.items()})
    with open(self.path, 'a', encoding='utf-8') as f:
      f.write(json.dumps(record) + '\n')
    for k, v in scalars.items():
      self._tb.add_scalar(f'{split}/{k}', float(v), step)
    self._tb.flush()
    shown = ' '.join(f'{k}={float(v):.4g}' for k, v in sorted(scalars.items()))
    elapsed = time.monotonic() - self._t0
    logging.info(
        '[%s] step %d/%d (%.0f%%, %.1fs) %s',
        split,
        step,
        self._total,
        100.0 * step / max(self._total, 1),
        elapsed,
        shown,
    )

  def close(self):
    self._tb.close()


def rollback(path: str, step: int) -> int:
  """Keeps only the records of steps <= `step` in a metrics.jsonl file.

  Rewrites through a temporary file, fsync and atomic rename, so a kill during
  the rollback leaves either the old or the new file. A torn last line (a kill
  mid-write) is dropped too.

  Args:
    path: The metrics.jsonl file; nothing happens when it does not exist.
    step: The restored update; 0 for a run that starts from scratch.

  Returns:
    How many lines were dropped.
  """
  if not os.path.exists(path):
    return 0
  kept, dropped = [], 0
  for _, record in trajectory.parse_json_lines(path, lambda obj: obj):
    if isinstance(record, trajectory.LineError) or record.get('step', 0) > step:
      dropped += 1
    else:
      kept.append(json.dumps(record) + '\n')
  if not dropped:
    return 0
  tmp = path + '.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    f.writelines(kept)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
  dir_fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
  try:
    os.fsync(dir_fd)
  finally:
    os.close(dir_fd)
  return dropped


def read_metrics(path: str, split: str = 'train') -> list[dict]:
  """The records of one split from a metrics.jsonl file, in order."""
  if not os.path.exists(path):
    return []
  with open(path, encoding='utf-8') as f:
    rows = [json.loads(line) for line in f if line.strip()]
  return [r for r in rows if r['split'] == split]
