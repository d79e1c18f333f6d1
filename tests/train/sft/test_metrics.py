"""metrics.jsonl roll-back on resume: no record of an update twice."""

import json

from search_agent.train.sft import metrics as metrics_lib


def _write(path, rows, tail=''):
  with open(path, 'w', encoding='utf-8') as f:
    for r in rows:
      f.write(json.dumps(r) + '\n')
    f.write(tail)


def _rows(steps):
  rows = []
  for s in steps:
    rows.append({'step': s, 'split': 'train', 'nll': 1.0 / s})
    if s % 2 == 0:
      rows.append({'step': s, 'split': 'val', 'nll': 2.0 / s})
  return rows


def test_rollback_drops_records_past_the_restored_step(tmp_path):
  path = tmp_path / 'metrics.jsonl'
  # Checkpoint at 2, killed mid-write of update 4: 3 and half of 4 are stale.
  _write(path, _rows([1, 2, 3]), tail='{"step": 4, "spl')
  assert metrics_lib.rollback(str(path), 2) == 2
  assert metrics_lib.read_metrics(str(path)) == [
      {'step': 1, 'split': 'train', 'nll': 1.0},
      {'step': 2, 'split': 'train', 'nll': 0.5},
  ]
  assert [r['step'] for r in metrics_lib.read_metrics(str(path), 'val')] == [2]
  assert not (tmp_path / 'metrics.jsonl.tmp').exists()
  assert metrics_lib.rollback(str(path), 2) == 0  # idempotent
  assert metrics_lib.rollback(str(tmp_path / 'absent.jsonl'), 3) == 0


def test_resumed_writer_appends_after_the_rollback(tmp_path):
  _write(tmp_path / 'metrics.jsonl', _rows([1, 2, 3]))
  writer = metrics_lib.MetricsWriter(str(tmp_path), 4, resume_step=2)
  for s in (3, 4):
    writer.write(s, 'train', {'nll': 1.0 / s})
  writer.close()
  steps = [
      r['step']
      for r in metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'))
  ]
  assert steps == [1, 2, 3, 4]


def test_fresh_start_clears_a_run_killed_before_its_first_checkpoint(
    tmp_path,
):
  _write(tmp_path / 'metrics.jsonl', _rows([1]))
  metrics_lib.MetricsWriter(str(tmp_path), 4).close()
  assert metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl')) == []
