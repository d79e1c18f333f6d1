"""Benchmark readers: published formats in, `Task` records (in memory) out.

* `browsecomp`: the simple-evals CSV `problem, answer, problem_topic,
  canary`, fields encrypted with the SHA-256-of-canary scheme.
* `xbench`: xbench-DeepSearch CSV `id, prompt, answer, reference_steps,
  canary`, fields XOR'ed with the raw canary bytes.
* `browsecomp_plus`: JSONL rows `{query_id, query, answer, ...}` (the
  Tevatron/browsecomp-plus layout), either decrypted or encrypted with the
  BrowseComp scheme (canary per row or `DatasetConfig.canary`); evidence doc
  ids from a TREC qrels file (`qrels_path`) or the rows' `evidence_docs`.
* `tasks`: our own task JSONL (search_agent/agent/task.py).

Tasks of encrypted sources carry their canary in `meta['canary']` so the
eval can re-encrypt what it writes; plaintext never leaves memory.
"""

import csv
import dataclasses
import json
import os
from typing import Any, Iterator

from search_agent.agent import task as task_lib
from search_agent.evaluation import decryption
from search_agent.search import trec

FORMATS = ('browsecomp', 'xbench', 'browsecomp_plus', 'tasks')


class DatasetError(ValueError):
  """A benchmark file is missing, has the wrong columns, or will not decrypt."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DatasetConfig:
  """Which benchmark to read.

  Attributes:
    name: Name recorded in results (e.g. 'browsecomp').
    format: One of FORMATS.
    path: The benchmark file.
    qrels_path: browsecomp_plus: TREC qrels with evidence doc ids (optional).
    canary: browsecomp_plus: canary for rows without a `canary` field; empty
      means the rows are plaintext.
    limit: Read only the first `limit` questions (0: all).
  """

  name: str
  format: str
  path: str
  qrels_path: str = ''
  canary: str = ''
  limit: int = 0

  def __post_init__(self):
    if self.format not in FORMATS:
      raise DatasetError(
          f'dataset format {self.format!r} is not one of {FORMATS}'
      )


def load(config: DatasetConfig) -> list[task_lib.Task]:
  """Reads (and decrypts in memory) the benchmark's questions."""
  if not os.path.isfile(config.path):
    raise DatasetError(f'{config.name}: no such file {config.path}')
  readers = {
      'browsecomp': _browsecomp,
      'xbench': _xbench,
      'browsecomp_plus': _browsecomp_plus,
      'tasks': lambda c: task_lib.iter_tasks(c.path),
  }
  tasks = []
  for t in readers[config.format](config):
    tasks.append(t)
    if config.limit and len(tasks) >= config.limit:
      break
  if not tasks:
    raise DatasetError(f'{config.name}: {config.path} holds no questions')
  return tasks


def _csv_rows(path: str, columns: tuple[str, ...]) -> Iterator[dict[str, str]]:
  with open(path, encoding='utf-8-sig', newline='') as f:
    reader = csv.DictReader(f)
    missing = set(columns) - set(reader.fieldnames or ())
    if missing:
      raise DatasetError(
          f'{path}: missing columns {sorted(missing)}; found'
          f' {reader.fieldnames}'
      )
    yield from reader


def _decrypt(fn, field: str, canary: str, where: str) -> str:
  try:
    return fn(field, canary)
  except decryption.DecryptionError as e:
    raise DatasetError(f'{where}: {e}') from e


def _browsecomp(config: DatasetConfig) -> Iterator[task_lib.Task]:
  columns = ('problem', 'answer', 'problem_topic', 'canary')
  for i, row in enumerate(_csv_rows(config.path, columns)):
    where, canary = f'{config.path} row {i + 1}', row['canary']
    dec = decryption.browsecomp_decrypt
    yield task_lib.Task(
        id=f'{config.name}-{i}',
        question=_decrypt(dec, row['problem'], canary, where),
        answer=_decrypt(dec, row['answer'], canary, where),
        meta={'topic': row['problem_topic'], 'canary': canary},
    )


def _xbench(config: DatasetConfig) -> Iterator[task_lib.Task]:
  columns = ('id', 'prompt', 'answer', 'canary')
  for i, row in enumerate(_csv_rows(config.path, columns)):
    where, canary = f'{config.path} row {i + 1}', row['canary']
    dec = decryption.xbench_decrypt
    yield task_lib.Task(
        id=f'{config.name}-{row["id"]}',
        question=_decrypt(dec, row['prompt'], canary, where),
        answer=_decrypt(dec, row['answer'], canary, where),
        meta={'canary': canary, 'canary_scheme': 'xbench'},
    )


def _evidence(config: DatasetConfig) -> dict[str, tuple[str, ...]]:
  if not config.qrels_path:
    return {}
  qrels = trec.read_qrels(config.qrels_path)
  return {
      qid: tuple(sorted(d for d, rel in docs.items() if rel > 0))
      for qid, docs in qrels.items()
  }


def _browsecomp_plus(config: DatasetConfig) -> Iterator[task_lib.Task]:
  evidence = _evidence(config)
  with open(config.path, encoding='utf-8') as f:
    for line_no, line in enumerate(f, 1):
      if not line.strip():
        continue
      where = f'{config.path}:{line_no}'
      try:
        row: dict[str, Any] = json.loads(line)
        qid = str(row['query_id'])
        query, answer = row['query'], row['answer']
      except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DatasetError(
            f'{where}: want a JSON object with query_id, query, answer ({e!r})'
        ) from e
      canary = row.get('canary') or config.canary
      meta = {}
      if canary:
        dec = decryption.browsecomp_decrypt
        query = _decrypt(dec, query, canary, where)
        answer = _decrypt(dec, answer, canary, where)
        meta['canary'] = canary
      docs = evidence.get(qid) or tuple(
          str(d['docid']) for d in row.get('evidence_docs', ()) if 'docid' in d
      )
      yield task_lib.Task(
          id=f'{config.name}-{qid}',
          question=query,
          answer=answer,
          evidence=docs,
          meta={**meta, 'query_id': qid},
      )
