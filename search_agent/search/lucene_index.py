"""On-disk layout of the Lucene views, and the writer that fills it.

`<dir>/doc/` is one Lucene index with a row per document (the doc view
searches `text`, the title view `title`, `doc_id` finds a row), `<dir>/passage/`
one with a row per passage window; both carry `doc_ord`, the document's
0-based position in the build, as a doc value, and nothing stored.
`<dir>/store/` holds the documents uncompressed by ordinal (`DocStore.java`:
ten documents are ten reads of a mapped file, where Lucene's stored fields
decompress a block per document), `<dir>/doc_ids.txt` maps ordinals back to
doc_ids and `<dir>/lucene_config.json` holds the `IndexBuildConfig`. The analysis is
`analysis.py`'s, in Lucene (`index/lucene_views/.../EnglishAnalysis.java`).
Documents cross the bridge in batches; each index is merged to one segment
at the end.
"""

import json
import pathlib
from typing import Iterable

import jpype

from search_agent.corpus import sources
from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.record import Document
from search_agent.search import lucene_jvm
from search_agent.search import sites
from search_agent.search.backend import admit_doc_id
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.tantivy_build import write_views

CONFIG_FILE = 'lucene_config.json'
DOC_IDS_FILE = 'doc_ids.txt'
BATCH_DOCS = 1000


def read_config(index_dir: pathlib.Path) -> IndexBuildConfig:
  """The build config of a Lucene views dir; BackendError if it is none."""
  path = pathlib.Path(index_dir) / CONFIG_FILE
  if not path.is_file():
    raise BackendError(
        f'{index_dir} is not a built Lucene index ({CONFIG_FILE} missing);'
        ' build one with `python -m index.build --config.backend=lucene`'
    )
  return IndexBuildConfig(**json.loads(path.read_text()))


class LuceneIndexWriter:
  """Writes documents into the Lucene views of a fresh dir.

  Use as a context manager; `close()` commits and merges. Counts are in
  `counts`.
  """

  def __init__(
      self,
      index_dir: pathlib.Path,
      config: IndexBuildConfig,
      ram_buffer_mb: float = 256.0,
  ):
    self._dir = pathlib.Path(index_dir)
    if (self._dir / CONFIG_FILE).exists():
      raise BackendError(
          f'{self._dir} already holds an index; pick an empty directory'
      )
    self._dir.mkdir(parents=True, exist_ok=True)
    self._config = config
    writer_class = lucene_jvm.java_class('ViewsWriter')
    try:
      self._writer = writer_class(
          str(self._dir), config.passage_window_words,
          config.passage_stride_words, config.stem, config.remove_stopwords,
          float(ram_buffer_mb),
      )  # fmt: skip
    except jpype.JException as e:
      raise BackendError(f'cannot write a Lucene index in {self._dir}: {e}')
    self._ids_file = open(self._dir / DOC_IDS_FILE, 'w', encoding='utf-8')
    self._seen: set[str] = set()
    self._batch: list[Document] = []
    self.counts = {'doc': 0, 'passage': 0, 'title': 0}

  def add(self, doc: Document) -> None:
    """Adds one document (sent to Lucene with its batch)."""
    admit_doc_id(doc.doc_id, self._seen)
    self._ids_file.write(doc.doc_id + '\n')
    self._batch.append(doc)
    if len(self._batch) >= BATCH_DOCS:
      self._flush()

  def add_all(self, docs: Iterable[Document]) -> None:
    for doc in docs:
      self.add(doc)

  def _flush(self) -> None:
    if not self._batch:
      return
    strings = jpype.JArray(jpype.JString)
    b, self._batch = self._batch, []
    self._writer.add(
        strings([d.doc_id for d in b]),
        strings([d.title for d in b]),
        strings([d.url for d in b]),
        strings([d.text for d in b]),
        strings([' '.join(sites.host_suffixes(d.url)) for d in b]),
        jpype.JArray(jpype.JInt)([len(d.links) for d in b]),
        strings([link for d in b for link in d.links]),
    )
    docs, passages = self._writer.counts()
    self.counts = {'doc': int(docs), 'passage': int(passages), 'title': 0}
    self.counts['title'] = self.counts['doc']

  def close(self) -> None:
    """Sends the last batch, commits and merges; the dir is then usable."""
    self._flush()
    self._ids_file.close()
    self._writer.close()
    (self._dir / CONFIG_FILE).write_text(
        json.dumps(self._config.__dict__, indent=1)
    )

  def abort(self) -> None:
    """Drops what was not committed (after a failure)."""
    self._ids_file.close()
    self._writer.abort()

  def __enter__(self):
    return self

  def __exit__(self, exc_type, *_):
    if exc_type is None:
      self.close()
    else:
      self.abort()


def build_lucene_index(
    spec: sources.CorpusSpec,
    index_dir: str | pathlib.Path,
    config: IndexBuildConfig = IndexBuildConfig(),
    *,
    ram_buffer_mb: float = 256.0,
    progress: bool = False,
) -> BuildManifest:
  """Reads the corpus, writes the Lucene views and a manifest.

  Raises:
    CorpusError: if the corpus cannot be read.
    BackendError: if the directory already holds an index or a doc_id
      repeats; LuceneUnavailable if the JVM side is missing.
  """
  index_dir = pathlib.Path(index_dir)
  return write_views(
      spec,
      index_dir,
      config,
      lambda: LuceneIndexWriter(index_dir, config, ram_buffer_mb),
      backend='lucene',
      progress=progress,
  )
