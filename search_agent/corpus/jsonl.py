"""JSONL corpora: one `Document.to_json()` object per line."""

import json
import pathlib
from typing import Iterable, Iterator

from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document


def read_jsonl(path: str | pathlib.Path) -> Iterator[Document]:
  """Yields the documents of a JSONL file (blank lines skipped).

  Raises:
    CorpusError: for a missing file or a malformed line (with its number).
  """
  path = pathlib.Path(path)
  if not path.is_file():
    raise CorpusError(f'JSONL corpus {path} does not exist')
  with path.open(encoding='utf-8') as f:
    for lineno, line in enumerate(f, start=1):
      if not line.strip():
        continue
      try:
        yield Document.from_json(json.loads(line))
      except (ValueError, TypeError, AttributeError) as e:
        raise CorpusError(f'{path}:{lineno}: not a document record: {e}')


def write_jsonl(docs: Iterable[Document], path: str | pathlib.Path) -> int:
  """Writes documents as JSONL; returns how many were written."""
  n = 0
  with pathlib.Path(path).open('w', encoding='utf-8') as f:
    for doc in docs:
      f.write(json.dumps(doc.to_json(), ensure_ascii=False) + '\n')
      n += 1
  return n
