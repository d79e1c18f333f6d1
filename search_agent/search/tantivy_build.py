"""Builds a tantivy index directory (+ manifest) from a corpus spec."""

import datetime
import pathlib
import time
from typing import Any, Callable

import tqdm

from search_agent.corpus import sources
from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.manifest import CorpusHasher
from search_agent.search import tantivy_index
from search_agent.search.backend import IndexBuildConfig


def corpus_record(spec: sources.CorpusSpec) -> dict[str, object]:
  """The manifest's description of where the documents came from."""
  return {
      'kind': spec.kind,
      'path': spec.path or 'bundled 2Wiki copy',
      'max_docs': spec.max_docs,
      'derive_links': spec.derive_links,
  }


def build_tantivy_index(
    spec: sources.CorpusSpec,
    index_dir: str | pathlib.Path,
    config: IndexBuildConfig = IndexBuildConfig(),
    *,
    heap_bytes: int = 256_000_000,
    threads_per_view: int = 1,
    progress: bool = False,
) -> BuildManifest:
  """Reads the corpus, writes the doc and passage views and a manifest.

  Args:
    spec: Which corpus to read.
    index_dir: An empty or new directory for the index.
    config: Passage window/stride and analysis.
    heap_bytes: tantivy writer memory per view.
    threads_per_view: tantivy indexing threads per view.
    progress: Show a progress bar on stderr.

  Returns:
    The manifest, also written to `<index_dir>/manifest.json`.

  Raises:
    CorpusError: if the corpus cannot be read.
    BackendError: if the directory already holds an index or a doc_id
      repeats.
  """
  index_dir = pathlib.Path(index_dir)
  return write_views(
      spec,
      index_dir,
      config,
      lambda: tantivy_index.IndexWriter(
          index_dir, config, heap_bytes, threads_per_view
      ),
      backend='tantivy',
      progress=progress,
  )


def write_views(
    spec: sources.CorpusSpec,
    index_dir: pathlib.Path,
    config: IndexBuildConfig,
    open_writer: Callable[[], Any],
    *,
    backend: str,
    progress: bool,
) -> BuildManifest:
  """Reads the corpus into the writer `open_writer()` gives, then the manifest.

  The writer is a context manager with `add(doc)` and `counts` (tantivy's
  IndexWriter, the Lucene one), opened once the corpus has been read.
  """
  start = time.perf_counter()
  docs, links_note = sources.read_corpus(spec)
  hasher = CorpusHasher()
  suffix = '' if backend == 'tantivy' else f' ({backend})'
  with open_writer() as writer:
    for doc in tqdm.tqdm(
        docs, unit='doc', mininterval=2.0, disable=not progress,
        desc=f'indexing {spec.kind}{suffix}',
    ):  # fmt: skip
      hasher.update(doc)
      writer.add(doc)
  seconds = time.perf_counter() - start
  manifest = BuildManifest(
      backend=backend,
      corpus=corpus_record(spec),
      content_sha256=hasher.hexdigest(),
      counts=dict(writer.counts),
      config=dict(config.__dict__),
      build_seconds=round(seconds, 3),
      docs_per_second=round(writer.counts['doc'] / max(seconds, 1e-9), 1),
      links_note=links_note,
      created_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(
          timespec='seconds'
      ),
  )
  manifest.write(index_dir)
  return manifest
