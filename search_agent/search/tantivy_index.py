"""On-disk tantivy layout of the three views, and the writer that fills it.

`<dir>/doc/` is one tantivy index with a row per document: the doc view
searches its `text` field and the title view its `title` field (BM25 in
tantivy is per field, so each view has its own statistics). The doc view is
the body only: the title view scores titles, and on the bundled 2Wiki corpus
a body field beat body+title fusion (ANCHORS.md: recall@10 0.710 vs 0.682).
`<dir>/passage/` has a row per passage (text not stored). Both carry
`doc_ord`, the document's 0-based position in the build, as a fast field;
`<dir>/doc_ids.txt` maps ordinals back to doc_ids, one per line.
"""

import json
import pathlib
from typing import Iterable

import tantivy

from search_agent.corpus.passages import window_starts
from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import sites
from search_agent.search.backend import admit_doc_id
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig

DOC_DIR = 'doc'
PASSAGE_DIR = 'passage'
DOC_IDS_FILE = 'doc_ids.txt'
CONFIG_FILE = 'index_config.json'


def doc_schema():
  b = tantivy.SchemaBuilder()
  b.add_unsigned_field('doc_ord', stored=False, indexed=True, fast=True)
  b.add_text_field('doc_id', stored=True, tokenizer_name='raw')
  b.add_text_field('url', stored=True, tokenizer_name='raw')
  b.add_text_field('site', stored=False, tokenizer_name='raw')
  b.add_text_field('links', stored=True, tokenizer_name='raw')
  b.add_text_field('title', stored=True, tokenizer_name=analysis.ANALYZER_NAME)
  b.add_text_field('text', stored=True, tokenizer_name=analysis.ANALYZER_NAME)
  return b.build()


def passage_schema():
  b = tantivy.SchemaBuilder()
  b.add_unsigned_field('doc_ord', stored=False, indexed=True, fast=True)
  b.add_text_field('site', stored=False, tokenizer_name='raw')
  b.add_text_field('text', stored=False, tokenizer_name=analysis.ANALYZER_NAME)
  return b.build()


def register(index, config: IndexBuildConfig):
  """Registers the analyzer `config` asks for on a tantivy index."""
  index.register_tokenizer(
      analysis.ANALYZER_NAME,
      analysis.build_analyzer(
          stem=config.stem, remove_stopwords=config.remove_stopwords
      ),
  )
  return index


def open_indexes(index_dir: pathlib.Path):
  """Opens a built index dir: (config, doc index, passage index, doc_ids)."""
  index_dir = pathlib.Path(index_dir)
  config_path = index_dir / CONFIG_FILE
  if not config_path.is_file():
    raise BackendError(
        f'{index_dir} is not a built tantivy index ({CONFIG_FILE} missing);'
        ' build one with `python -m index.build`'
    )
  config = IndexBuildConfig(**json.loads(config_path.read_text()))
  try:
    doc = register(tantivy.Index.open(str(index_dir / DOC_DIR)), config)
    passage = register(tantivy.Index.open(str(index_dir / PASSAGE_DIR)), config)
  except ValueError as e:
    raise BackendError(f'cannot open the tantivy index in {index_dir}: {e}')
  doc_ids = (index_dir / DOC_IDS_FILE).read_text().split('\n')[:-1]
  return config, doc, passage, doc_ids


def doc_row(doc: Document, ordinal: int, site: list[str], schema):
  """The doc index row (doc and title views) of one document."""
  return tantivy.Document.from_dict(
      {
          'doc_ord': ordinal,
          'doc_id': doc.doc_id,
          'url': doc.url,
          'site': site,
          'links': list(doc.links),
          'title': doc.title,
          'text': doc.text,
      },
      schema,
  )


def passage_rows(
    doc: Document,
    ordinal: int,
    site: list[str],
    config: IndexBuildConfig,
    schema,
) -> list:
  """The passage index rows of one document (`split_passages` windows).

  Builds the window texts straight from the words: the Passage records
  (ids, ordinals) are not indexed, so they are not made.
  """
  words = doc.text.split()
  n = config.passage_window_words
  return [
      tantivy.Document.from_dict(
          {
              'doc_ord': ordinal,
              'site': site,
              'text': ' '.join(words[s : s + n]),
          },
          schema,
      )
      for s in window_starts(len(words), n, config.passage_stride_words)
  ]


class IndexWriter:
  """Writes documents into the doc and passage indexes of a fresh dir.

  Use as a context manager; `close()` commits. Counts are in `counts`.
  """

  def __init__(
      self,
      index_dir: pathlib.Path,
      config: IndexBuildConfig,
      heap_bytes: int = 256_000_000,
      threads_per_view: int = 1,
  ):
    self._dir = pathlib.Path(index_dir)
    if (self._dir / CONFIG_FILE).exists():
      raise BackendError(
          f'{self._dir} already holds an index; pick an empty directory'
      )
    self._config = config
    self._doc_schema = doc_schema()
    self._passage_schema = passage_schema()
    (self._dir / DOC_DIR).mkdir(parents=True, exist_ok=True)
    (self._dir / PASSAGE_DIR).mkdir(parents=True, exist_ok=True)
    self._doc_index = register(
        tantivy.Index(self._doc_schema, str(self._dir / DOC_DIR)), config
    )
    self._passage_index = register(
        tantivy.Index(self._passage_schema, str(self._dir / PASSAGE_DIR)),
        config,
    )
    self._doc_writer = self._doc_index.writer(heap_bytes, threads_per_view)
    self._passage_writer = self._passage_index.writer(
        heap_bytes, threads_per_view
    )
    self._ids_file = open(self._dir / DOC_IDS_FILE, 'w', encoding='utf-8')
    self._seen: set[str] = set()
    self.counts = {'doc': 0, 'passage': 0, 'title': 0}

  def add(self, doc: Document) -> None:
    """Adds one document and its passages."""
    admit_doc_id(doc.doc_id, self._seen)
    ordinal = self.counts['doc']
    site = sites.host_suffixes(doc.url)
    self._doc_writer.add_document(doc_row(doc, ordinal, site, self._doc_schema))
    self._ids_file.write(doc.doc_id + '\n')
    for row in passage_rows(
        doc, ordinal, site, self._config, self._passage_schema
    ):
      self._passage_writer.add_document(row)
      self.counts['passage'] += 1
    self.counts['doc'] += 1
    self.counts['title'] += 1

  def add_all(self, docs: Iterable[Document]) -> None:
    for doc in docs:
      self.add(doc)

  def close(self) -> None:
    """Commits both views and writes the config; the dir is then usable."""
    self._ids_file.close()
    for w in (self._doc_writer, self._passage_writer):
      w.commit()
      w.wait_merging_threads()
    (self._dir / CONFIG_FILE).write_text(
        json.dumps(self._config.__dict__, indent=1)
    )

  def __enter__(self):
    return self

  def __exit__(self, exc_type, *_):
    if exc_type is None:
      self.close()
    else:
      self._ids_file.close()
