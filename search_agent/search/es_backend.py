"""The Elasticsearch / OpenSearch backend: build the views, answer batches.

`build_es_index` creates the doc and passage indices (`es_bodies.py`) and
bulk-loads a corpus with retries and progress (`es_bulk.py`); `EsBackend`
answers `SearchBackend` calls with one `_msearch` per batch of up to
`queries_per_msearch` queries (every view of every query) and reads documents back with `_mget`. The same code drives
the official `elasticsearch` client and `opensearch-py`
(`es_client.ClusterConfig.flavor`).
"""

import dataclasses
import logging
import time
from typing import Any, Callable, Iterable, Sequence

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import es_bodies
from search_agent.search import es_bulk
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.es_client import ClusterConfig
from search_agent.search.es_client import SearchClient
from search_agent.search.parser import ParsedQuery


@dataclasses.dataclass(frozen=True, kw_only=True)
class EsIndexConfig:
  """Which indices hold a corpus, and how they are laid out.

  Attributes:
    cluster: Where the cluster is.
    index_prefix: Indices are `<prefix>-doc` and `<prefix>-passage`.
    shards: Primary shards per index. BM25 statistics are per shard, so
      rankings match the embedded backend exactly only with 1 shard.
    replicas: Replicas per index (0 on a single node, so it is green).
    bulk: Bulk loading (chunk size, retries).
    queries_per_msearch: Queries per `_msearch` request (each runs three
      searches, one per view); larger batches are split.
  """

  cluster: ClusterConfig = ClusterConfig()
  index_prefix: str = 'search-agent'
  shards: int = 1
  replicas: int = 0
  bulk: es_bulk.BulkConfig = es_bulk.BulkConfig()
  queries_per_msearch: int = 64

  def __post_init__(self):
    if self.shards < 1 or self.replicas < 0 or self.queries_per_msearch < 1:
      raise ValueError(
          'need shards >= 1, replicas >= 0 and queries_per_msearch >= 1, got'
          f' {self.shards}, {self.replicas}, {self.queries_per_msearch}'
      )


def _actions(docs: Iterable[Document], build: IndexBuildConfig, names, seen):
  for doc in docs:
    if doc.doc_id in seen:
      raise BackendError(
          f'duplicate doc_id {doc.doc_id!r}; doc_ids must be unique'
      )
    seen.add(doc.doc_id)
    passages = split_passages(
        doc, build.passage_window_words, build.passage_stride_words
    )
    yield from es_bodies.bulk_actions(doc, passages, names)


def build_es_index(
    config: EsIndexConfig,
    docs: Iterable[Document],
    build: IndexBuildConfig,
    *,
    overwrite: bool = False,
    progress: Callable[[es_bulk.BulkStats], None] | None = None,
) -> dict[str, Any]:
  """Creates the indices for `docs` and loads them.

  Args:
    config: Cluster and index layout.
    docs: The corpus, doc_ids unique.
    build: Passage window/stride and analysis (stopwords, stemming).
    overwrite: Delete existing indices of that prefix first; otherwise an
      existing index is an error. A build that failed half-way leaves its
      indices behind: rebuild with overwrite.
    progress: Called after each bulk request with the running stats.

  Returns:
    Counts and timings: {'documents', 'passages', 'actions', 'requests',
    'retried', 'seconds'}.

  Raises:
    BackendError: the cluster is unreachable, the indices exist (without
      overwrite), or loading failed.
  """
  client = SearchClient(config.cluster)
  names = es_bodies.index_names(config.index_prefix)
  t0 = time.monotonic()
  try:
    client.check_cluster()
    indices = client.raw.indices
    existing = [
        name
        for name in names.values()
        if client.call('exists', indices.exists, index=name)
    ]
    if existing and not overwrite:
      raise BackendError(
          f'index {existing[0]} already exists; pick another index_prefix or'
          ' rebuild with overwrite'
      )
    for name in existing:
      client.call('delete index', indices.delete, index=name)
    for kind, name in names.items():
      body = es_bodies.create_index_body(
          kind, build, shards=config.shards, replicas=config.replicas
      )
      client.call('create index', indices.create, index=name, body=body)
    seen: set[str] = set()
    stats = es_bulk.bulk_load(
        client, _actions(docs, build, names, seen), config.bulk, progress
    )
    for name in names.values():
      client.call(
          'settings',
          indices.put_settings,
          index=name,
          body={'index': {'refresh_interval': '1s'}},
      )
      client.call('refresh', indices.refresh, index=name)
  finally:
    client.close()
  seconds = time.monotonic() - t0
  logging.info(
      'indexed %d documents (%d actions) into %s-* in %.1f s',
      len(seen),
      stats.indexed,
      config.index_prefix,
      seconds,
  )
  return {
      'documents': len(seen),
      'passages': stats.indexed - len(seen),
      'actions': stats.indexed,
      'requests': stats.requests,
      'retried': stats.retried,
      'seconds': seconds,
  }


class EsBackend:
  """`SearchBackend` over indices built by `build_es_index`."""

  def __init__(self, config: EsIndexConfig):
    self._client = SearchClient(config.cluster)
    self._batch = config.queries_per_msearch
    self._names = es_bodies.index_names(config.index_prefix)
    try:
      self._check_indices(config)
    except BackendError:
      self._client.close()
      raise

  def _check_indices(self, config: EsIndexConfig) -> None:
    """Checks the cluster and indices; reads the build config they hold."""
    self._client.check_cluster()
    indices = self._client.raw.indices
    for name in self._names.values():
      if not self._client.call('exists', indices.exists, index=name):
        raise BackendError(
            f'index {name} not found at {", ".join(config.cluster.hosts)};'
            ' build it first (build_es_index / python -m index.build)'
        )
    mapping = self._client.call(
        'mapping', indices.get_mapping, index=self._names['doc']
    )
    (meta,) = [m['mappings'].get('_meta', {}) for m in mapping.values()]
    if 'build' not in meta:
      raise BackendError(
          f'index {self._names["doc"]} was not built by build_es_index (no'
          ' build config in its _meta mapping); rebuild it'
      )
    self.build_config = IndexBuildConfig(**meta['build'])
    # The BuildManifest fields, when built by es_build.build_es_from_spec.
    self.manifest: dict[str, Any] | None = meta.get('manifest')

  def view_rankings(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[str]]]:
    """Per query, per view, up to k doc_ids best first (see SearchBackend).

    One `_msearch` per `queries_per_msearch` queries.
    """
    if k < 1:
      raise ValueError(f'k must be >= 1, got {k}')
    out = []
    for start in range(0, len(queries), self._batch):
      out += self._msearch(queries[start : start + self._batch], k)
    return out

  def _msearch(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[str]]]:
    body = es_bodies.msearch_body(queries, k, self._names)
    response = self._client.call('msearch', self._client.raw.msearch, body=body)
    answers = iter(response['responses'])
    out = []
    for q in queries:
      views: dict[str, list[str]] = {}
      for view in VIEWS:
        answer = next(answers)
        if 'error' in answer:
          raise BackendError(
              f'{view} view search for {q.raw!r:.100} failed:'
              f' {str(answer["error"])[:400]}'
          )
        views[view] = [
            es_bodies.hit_doc_id(h, view) for h in answer['hits']['hits']
        ]
      out.append(views)
    return out

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    """The stored documents, None for an unknown doc_id, in input order."""
    if not doc_ids:
      return []
    response = self._client.call(
        'mget',
        self._client.raw.mget,
        index=self._names['doc'],
        body={'ids': list(doc_ids)},
    )
    return [
        es_bodies.document_from_source(d['_source']) if d.get('found') else None
        for d in response['docs']
    ]

  def num_documents(self) -> int:
    response = self._client.call(
        'count', self._client.raw.count, index=self._names['doc']
    )
    return int(response['count'])

  def close(self) -> None:
    self._client.close()


def es_index_config(config) -> EsIndexConfig:
  """`EsIndexConfig` from the ConfigDict of tpu_configs/search/opensearch.py.

  Args:
    config: A ConfigDict (or any object) with `cluster`, `index` and `bulk`
      sections as in that file; a field left out keeps its default, an
      unknown field is an error.

  Raises:
    TypeError: for a field the dataclasses do not have.
  """
  cluster = dict(config.cluster)
  hosts = tuple(cluster.pop('hosts', ClusterConfig.hosts))
  index = dict(config.index)
  return EsIndexConfig(
      cluster=ClusterConfig(hosts=hosts, **cluster),
      index_prefix=index.pop('prefix'),
      bulk=es_bulk.BulkConfig(**dict(config.bulk)),
      **index,
  )
