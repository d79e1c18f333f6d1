"""The run journal: one fsynced JSON line per finished evidence graph.

A graph's line holds every decision taken on its proposals and the tasks
it yielded, written once when the graph is finished. A killed run leaves
at most a torn last line, which `load` drops (and `Journal` truncates, so
the next append starts on a clean line); a resumed run skips graphs that
have a line. The outputs (tasks, decisions, funnel) are rebuilt from the
journal at the end with atomic renames, so nothing is written twice.
"""

import json
import os
import pathlib
from typing import Any, Iterator


class JournalError(RuntimeError):
  """The journal is unreadable beyond a torn last line."""


def _lines(path: pathlib.Path) -> Iterator[tuple[int, int, str]]:
  """(byte offset, end offset, line) of every newline-terminated line."""
  offset = 0
  with open(path, 'rb') as f:
    for raw in f:
      end = offset + len(raw)
      if raw.endswith(b'\n'):
        yield offset, end, raw.decode('utf-8')
      offset = end


class Journal:
  """Append-only per-graph records under `path`."""

  def __init__(self, path: str | os.PathLike[str]):
    self.path = pathlib.Path(path)
    self.records: dict[str, dict[str, Any]] = {}
    if self.path.exists():
      self._load()

  def _load(self) -> None:
    good_end = 0
    for offset, end, line in _lines(self.path):
      try:
        rec = json.loads(line)
      except json.JSONDecodeError as e:
        raise JournalError(
            f'{self.path}: line at byte {offset} is not JSON ({e}); only a'
            ' torn last line is expected after a kill'
        ) from e
      if rec['graph'] in self.records:
        raise JournalError(f'{self.path}: graph {rec["graph"]} appears twice')
      self.records[rec['graph']] = rec
      good_end = end
    if self.path.stat().st_size != good_end:
      with open(self.path, 'r+b') as f:
        f.truncate(good_end)
        f.flush()
        os.fsync(f.fileno())

  def done(self, graph_id: str) -> bool:
    return graph_id in self.records

  def append(self, record: dict[str, Any]) -> None:
    """Writes one graph's record (fsynced); a graph is written once."""
    gid = record['graph']
    if gid in self.records:
      raise JournalError(f'graph {gid} is already in {self.path}')
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + '\n'
    with open(self.path, 'ab') as f:
      f.write(line.encode('utf-8'))
      f.flush()
      os.fsync(f.fileno())
    self.records[gid] = record


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
  """Writes `text` to a temp file, fsyncs and renames it over `path`."""
  path = pathlib.Path(path)
  tmp = path.with_name(path.name + '.tmp')
  with open(tmp, 'w', encoding='utf-8') as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def write_jsonl_atomic(path, rows) -> None:
  write_atomic(
      path,
      ''.join(json.dumps(r, ensure_ascii=False) + '\n' for r in rows),
  )
