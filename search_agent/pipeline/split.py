r"""Splits filtered demonstrations into SFT train and validation files.

  python -m search_agent.pipeline.split --input=FILTERED.jsonl --workdir=OUT \
      [--val_fraction=0.05] [--min_val=8]

Splits by task (a hash of the task id), so no task has demonstrations on
both sides; writes OUT/train.jsonl, OUT/val.jsonl and OUT/split.json.
"""

import hashlib
import json
import os

from absl import app
from absl import flags

_INPUT = flags.DEFINE_string('input', None, 'Trajectory JSONL.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_FRACTION = flags.DEFINE_float('val_fraction', 0.05, 'Tasks held for val.')
_MIN_VAL = flags.DEFINE_integer('min_val', 8, 'Fewest validation lines.')


class SplitError(ValueError):
  """The input has nothing to split."""


def bucket(task_id: str) -> float:
  """A stable number in [0, 1) per task id."""
  digest = hashlib.sha256(task_id.encode('utf-8')).digest()
  return int.from_bytes(digest[:8], 'big') / 2**64


def split_lines(lines: list[str], fraction: float, min_val: int):
  """(train, val) lines; val holds whole tasks, at least min_val lines."""
  keyed = sorted(
      ((bucket(json.loads(l)['task_id']), i) for i, l in enumerate(lines)),
  )
  val_ids, val = set(), 0
  for b, i in keyed:
    if b >= fraction and val >= min_val:
      break
    val_ids.add(i)
    val += 1
  # Keep a task whole: add the rest of the last task's lines.
  if keyed and val_ids:
    last = max(b for b, i in keyed if i in val_ids)
    val_ids |= {i for b, i in keyed if b == last}
  train = [l for i, l in enumerate(lines) if i not in val_ids]
  return train, [l for i, l in enumerate(lines) if i in val_ids]


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  with open(_INPUT.value, encoding='utf-8') as f:
    lines = [l for l in f if l.strip()]
  if len(lines) <= _MIN_VAL.value:
    raise SplitError(
        f'{_INPUT.value} has {len(lines)} demonstrations, too few to keep'
        f' {_MIN_VAL.value} for validation: collect more (more tasks or'
        ' rollouts) or lower --min_val'
    )
  train, val = split_lines(lines, _FRACTION.value, _MIN_VAL.value)
  os.makedirs(_WORKDIR.value, exist_ok=True)
  for name, rows in (('train', train), ('val', val)):
    with open(os.path.join(_WORKDIR.value, f'{name}.jsonl'), 'w') as f:
      f.writelines(rows)
  counts = {'train': len(train), 'val': len(val), 'input': len(lines)}
  with open(os.path.join(_WORKDIR.value, 'split.json'), 'w') as f:
    json.dump(counts, f)
  print(json.dumps(counts))


if __name__ == '__main__':
  flags.mark_flags_as_required(['input', 'workdir'])
  app.run(main)
