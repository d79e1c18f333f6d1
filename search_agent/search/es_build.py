"""Builds the OpenSearch/Elasticsearch indices (+ manifest) from a corpus spec.

The counterpart of `tantivy_build.build_tantivy_index` for `index.build`
with an Elasticsearch/OpenSearch backend: same corpus readers, same
`BuildManifest` (backend 'opensearch' or 'elasticsearch'), written to a
local directory and also stored in the doc index's `_meta` mapping, so the
cluster itself says what it holds.
"""

import dataclasses
import datetime
import json
import pathlib
import time

import tqdm

from search_agent.corpus import sources
from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.manifest import CorpusHasher
from search_agent.search import es_backend
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.es_client import SearchClient


def _hashed(docs, hasher: CorpusHasher, bar):
  for doc in docs:
    hasher.update(doc)
    bar.update(1)
    yield doc


def build_es_from_spec(
    spec: sources.CorpusSpec,
    config: es_backend.EsIndexConfig,
    build: IndexBuildConfig = IndexBuildConfig(),
    *,
    manifest_dir: str | pathlib.Path | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> BuildManifest:
  """Reads the corpus, loads the doc and passage indices, writes a manifest.

  Args:
    spec: Which corpus to read.
    config: Cluster, index prefix, shards, bulk loading.
    build: Passage window/stride and analysis.
    manifest_dir: Where to write `manifest.json` too (None: cluster only).
    overwrite: Replace indices of the same prefix.
    progress: Show a progress bar (documents) on stderr.

  Returns:
    The manifest.

  Raises:
    CorpusError: if the corpus cannot be read.
    BackendError: if the cluster fails or the indices exist (no overwrite).
  """
  start = time.perf_counter()
  docs, links_note = sources.read_corpus(spec)
  hasher = CorpusHasher()
  bar = tqdm.tqdm(
      unit='doc',
      mininterval=2.0,
      disable=not progress,
      desc=f'indexing {spec.kind} into {config.index_prefix}-*',
  )
  made: list[BuildManifest] = []

  def store_manifest(stats, names) -> None:
    """Puts the manifest into the new doc index before it is swapped in."""
    seconds = time.perf_counter() - start
    n = stats['documents']
    manifest = BuildManifest(
        backend=config.cluster.flavor,
        corpus={
            'kind': spec.kind,
            'path': spec.path or 'bundled 2Wiki copy',
            'max_docs': spec.max_docs,
            'derive_links': spec.derive_links,
            'index_prefix': config.index_prefix,
            'hosts': list(config.cluster.hosts),
        },
        content_sha256=hasher.hexdigest(),
        counts={'doc': n, 'passage': stats['passages'], 'title': n},
        config=dict(build.__dict__),
        build_seconds=round(seconds, 3),
        docs_per_second=round(n / max(seconds, 1e-9), 1),
        links_note=links_note,
        created_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'
        ),
    )
    client = SearchClient(config.cluster)
    try:
      client.call(
          'put mapping',
          client.raw.indices.put_mapping,
          index=names['doc'],
          body={
              '_meta': {
                  'build': dict(build.__dict__),
                  'manifest': manifest.__dict__,
              }
          },
      )
    finally:
      client.close()
    made.append(manifest)

  with bar:
    es_backend.build_es_index(
        config,
        _hashed(docs, hasher, bar),
        build,
        overwrite=overwrite,
        source=json.dumps(dataclasses.asdict(spec), sort_keys=True),
        on_loaded=store_manifest,
    )
  (manifest,) = made
  if manifest_dir is not None:
    pathlib.Path(manifest_dir).mkdir(parents=True, exist_ok=True)
    manifest.write(manifest_dir)
  return manifest
