"""FineWeb-style parquet corpora: columns `text, id, url, ...`.

The title is the first non-empty line of the text when it is short
(<= `max_title_chars`, the usual shape of a page heading), else empty.
Web pages carry no link graph here: `links` is empty.
"""

import pathlib
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document

REQUIRED_COLUMNS = ('text', 'id', 'url')


def title_from_text(text: str, max_title_chars: int = 120) -> str:
  """The first non-empty line if it is at most `max_title_chars` long."""
  for line in text.split('\n'):
    line = line.strip()
    if line:
      return line if len(line) <= max_title_chars else ''
  return ''


def read_fineweb_parquet(
    path: str | pathlib.Path,
    *,
    max_title_chars: int = 120,
    batch_rows: int = 4096,
) -> Iterator[Document]:
  """Yields the rows of one parquet file (or every *.parquet in a dir).

  Raises:
    CorpusError: for a missing path, a file that is not parquet, a missing
      column, or a row with an empty id.
  """
  path = pathlib.Path(path)
  files = sorted(path.glob('*.parquet')) if path.is_dir() else [path]
  if not files or not all(f.is_file() for f in files):
    raise CorpusError(f'no parquet file at {path}')
  for f in files:
    try:
      pf = pq.ParquetFile(f)
    except (pa.ArrowException, OSError) as e:
      raise CorpusError(f'{f} is not a readable parquet file: {e}')
    missing = [c for c in REQUIRED_COLUMNS if c not in pf.schema_arrow.names]
    if missing:
      raise CorpusError(
          f'{f} lacks columns {missing}; FineWeb-style parquet needs'
          f' {list(REQUIRED_COLUMNS)}'
      )
    for batch in pf.iter_batches(
        batch_size=batch_rows, columns=list(REQUIRED_COLUMNS)
    ):
      cols = batch.to_pydict()
      for text, doc_id, url in zip(cols['text'], cols['id'], cols['url']):
        if not doc_id:
          raise CorpusError(f'{f}: a row has an empty id (url {url!r})')
        text = text or ''
        yield Document(
            doc_id=str(doc_id),
            title=title_from_text(text, max_title_chars),
            url=url or '',
            text=text,
        )
