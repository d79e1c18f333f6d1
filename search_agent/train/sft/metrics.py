"""Training metrics: one JSON line per record, TensorBoard scalars, progress.

`metrics.jsonl` in the workdir gets {'step', 'split', ...scalars} per record;
TensorBoard event files go to `workdir/tb` (tensorboardX); a progress line is
logged with absl.
"""

import json
import os
import time
from typing import Mapping

from absl import logging
import tensorboardX


class MetricsWriter:
  """Writes scalar metrics to JSONL, TensorBoard and the log."""

  def __init__(self, workdir: str, total_steps: int):
    os.makedirs(workdir, exist_ok=True)
    self.path = os.path.join(workdir, 'metrics.jsonl')
    self._tb = tensorboardX.SummaryWriter(os.path.join(workdir, 'tb'))
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


def read_metrics(path: str, split: str = 'train') -> list[dict]:
  """The records of one split from a metrics.jsonl file, in order."""
  with open(path, encoding='utf-8') as f:
    rows = [json.loads(line) for line in f if line.strip()]
  return [r for r in rows if r['split'] == split]
