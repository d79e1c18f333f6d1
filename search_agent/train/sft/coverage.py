"""Supervised-token coverage: how much of the SFT signal fits `seq_len`.

Every trajectory goes through the same context policy, renderer and fitting
as training (`train.data.to_examples`): a view keeps its longest prefix that
ends after a whole supervised turn and fits `seq_len`; later turns (their
rollout context does not fit) are dropped and counted. The report gives, per
split, supervised tokens kept / total (`supervised_token_coverage`), turns
kept, and final (answer) turns kept. The trainer writes it to
`<workdir>/data_report.json` and into metrics.jsonl as the `data` record.
"""

import json
import os
from typing import Any

from search_agent.train import data as data_lib

REPORT_FILE = 'data_report.json'


def split_coverage(
    path: str,
    lines: tuple[int, int],
    fmt: str,
    render: data_lib.RenderFn,
    seq_len: int,
) -> data_lib.Coverage:
  """Coverage of one split (every trajectory of `path[lines]`)."""
  cov = data_lib.Coverage()
  src = data_lib.JsonlTrajectories(path, lines, fmt)
  for i in range(len(src)):
    data_lib.to_examples(render(src[i]), seq_len, cov)
  return cov


def make_report(cfg, render: data_lib.RenderFn) -> dict[str, Any]:
  """{'seq_len', 'train': {...}, 'val': {...}} for an SFTConfig's data."""
  d = cfg.data
  report = {'seq_len': d.seq_len, 'mode': d.mode}
  if d.mode != 'sft':
    return report
  report['train'] = split_coverage(
      d.train_path, d.train_lines, d.format, render, d.seq_len
  ).as_dict()
  if d.val_path:
    report['val'] = split_coverage(
        d.val_path, d.val_lines, d.format, render, d.seq_len
    ).as_dict()
  return report


def write_report(workdir: str, report: dict[str, Any]) -> str:
  """Writes `<workdir>/data_report.json` atomically; returns its path."""
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, REPORT_FILE)
  tmp = path + '.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    json.dump(report, f, indent=1, sort_keys=True)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
  return path


def metrics_record(report: dict[str, Any]) -> dict[str, float]:
  """The scalars of the metrics.jsonl `data` record (train split first)."""
  out = {}
  for split in ('train', 'val'):
    if split not in report:
      continue
    prefix = '' if split == 'train' else 'val_'
    for k, v in report[split].items():
      out[prefix + k] = float(v)
  return out


def format_report(report: dict[str, Any]) -> str:
  """A few human-readable lines."""
  lines = [f"seq_len {report['seq_len']} ({report['mode']} data)"]
  for split in ('train', 'val'):
    r = report.get(split)
    if r is None:
      continue
    lines.append(
        f'{split}: supervised_token_coverage'
        f" {r['supervised_token_coverage']:.4f}"
        f" ({r['kept_tokens']:,} of {r['supervised_tokens']:,} tokens);"
        f" turns {r['kept_turns']:,}/{r['turns']:,};"
        f" final answer turns {r['kept_final_turns']:,}/{r['final_turns']:,}"
    )
  return '\n'.join(lines)
