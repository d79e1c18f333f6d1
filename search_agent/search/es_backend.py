"""The Elasticsearch / OpenSearch backend: build the views, answer batches.

`build_es_index` creates the doc and passage indices (`es_bodies.py`) and
bulk-loads a corpus with retries and progress (`es_bulk.py`), with no
replica during the load, then raises the replicas and waits for green.
`EsBackend` answers `SearchBackend` calls with one `_msearch` per batch of
up to `queries_per_msearch` queries (every view of every query) and reads
documents back with `_mget`. The same code drives the official
`elasticsearch` client and `opensearch-py` (`es_client.ClusterConfig.flavor`).

Rankings do not depend on the shard count: every search runs
`dfs_query_then_fetch` (index-wide BM25 statistics) and breaks score ties
by doc_id (`es_bodies.TIE_BREAK_SORT`). A search or read that missed a shard
(a node lost with no replica, a timeout) raises `ShardFailureError` instead
of answering from the other shards; it is retried `search_retries` times.
"""

import dataclasses
import logging
import time
from typing import Any, Callable, Iterable, Sequence

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import es_bodies
from search_agent.search import es_bulk
from search_agent.search import es_indices
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.es_client import ClusterConfig
from search_agent.search.es_client import SearchClient
from search_agent.search.es_client import ShardFailureError
from search_agent.search.es_client import TRANSIENT_STATUSES
from search_agent.search.es_client import TransientError
from search_agent.search.parser import ParsedQuery


@dataclasses.dataclass(frozen=True, kw_only=True)
class EsIndexConfig:
  """Which indices hold a corpus, and how they are laid out.

  Attributes:
    cluster: Where the cluster is.
    index_prefix: Indices are `<prefix>-doc` and `<prefix>-passage`.
    shards: Primary shards per index (Lucene holds at most 2^31 documents
      per shard; aim for 10-50 GB each). Rankings are the same for any
      count with `exact_scores`.
    replicas: Replicas per index, set once the load is done (it runs with
      none); the build waits for green, so the cluster needs at least
      replicas + 1 data nodes. A replica serves a lost node's shards.
    bulk: Bulk loading (chunk size, retries).
    queries_per_msearch: Queries per `_msearch` request (each runs three
      searches, one per view); larger batches are split.
    exact_scores: Search with `dfs_query_then_fetch`: BM25 from index-wide
      statistics, so scores and rankings do not depend on the shard count
      (one more round per search with 2+ shards).
    search_retries: Retries of a search or read that failed transiently
      (a node lost, a shard unavailable, a timeout); then it raises.
    retry_backoff_s: Wait before the first such retry; doubles each retry.
    green_timeout_s: How long the build waits for green once replicas are
      raised.
  """

  cluster: ClusterConfig = ClusterConfig()
  index_prefix: str = 'search-agent'
  shards: int = 1
  replicas: int = 0
  bulk: es_bulk.BulkConfig = es_bulk.BulkConfig()
  queries_per_msearch: int = 64
  exact_scores: bool = True
  search_retries: int = 3
  retry_backoff_s: float = 0.5
  green_timeout_s: float = 600.0

  def __post_init__(self):
    if self.shards < 1 or self.replicas < 0 or self.queries_per_msearch < 1:
      raise ValueError(
          'need shards >= 1, replicas >= 0 and queries_per_msearch >= 1, got'
          f' {self.shards}, {self.replicas}, {self.queries_per_msearch}'
      )
    if self.search_retries < 0:
      raise ValueError(f'search_retries must be >= 0: {self.search_retries}')


def _actions(docs: Iterable[Document], build: IndexBuildConfig, names, seen):
  for ordinal, doc in enumerate(docs):
    if doc.doc_id in seen:
      raise BackendError(
          f'duplicate doc_id {doc.doc_id!r}; doc_ids must be unique'
      )
    seen.add(doc.doc_id)
    passages = split_passages(
        doc, build.passage_window_words, build.passage_stride_words
    )
    yield from es_bodies.bulk_actions(doc, passages, names, ordinal=ordinal)


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
    es_indices.check_room_for_replicas(client, config.replicas)
    for kind, name in names.items():
      body = es_bodies.create_index_body(
          kind, build, shards=config.shards, replicas=0
      )
      client.call('create index', indices.create, index=name, body=body)
    seen: set[str] = set()
    stats = es_bulk.bulk_load(
        client, _actions(docs, build, names, seen), config.bulk, progress
    )
    es_indices.finish_load(
        client,
        list(names.values()),
        replicas=config.replicas,
        green_timeout_s=config.green_timeout_s,
    )
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
    self._config = config
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

    Raises:
      ShardFailureError: a search missed a shard, after the retries.
      BackendError: the cluster refused or failed otherwise.
    """
    return [
        {view: [doc_id for doc_id, _ in hits] for view, hits in q.items()}
        for q in self.view_scores(queries, k)
    ]

  def view_scores(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[tuple[str, float]]]]:
    """Like `view_rankings`, with each hit's BM25 score: (doc_id, score)."""
    if k < 1:
      raise ValueError(f'k must be >= 1, got {k}')
    out = []
    for start in range(0, len(queries), self._batch):
      batch = queries[start : start + self._batch]
      out += self._retrying('msearch', self._msearch, batch, k)
    return out

  def _retrying(self, what: str, fn, *args):
    """fn(*args), retried on TransientError with exponential backoff."""
    for attempt in range(self._config.search_retries + 1):
      try:
        return fn(*args)
      except TransientError as e:
        if attempt == self._config.search_retries:
          raise
        wait = self._config.retry_backoff_s * 2**attempt
        logging.warning(
            '%s failed (%s), retry %d in %.1f s', what, e, attempt + 1, wait
        )
        time.sleep(wait)
    raise AssertionError('unreachable')

  def _msearch(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[tuple[str, float]]]]:
    body = es_bodies.msearch_body(
        queries, k, self._names, exact=self._config.exact_scores
    )
    response = self._client.call('msearch', self._client.raw.msearch, body=body)
    answers = iter(response['responses'])
    out = []
    for q in queries:
      views: dict[str, list[tuple[str, float]]] = {}
      for view in VIEWS:
        answer = next(answers)
        _check_answer(answer, f'{view} view search for {q.raw!r:.100}')
        views[view] = [
            (es_bodies.hit_doc_id(h, view), float(h['_score']))
            for h in answer['hits']['hits']
        ]
      out.append(views)
    return out

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    """The stored documents, None for an unknown doc_id, in input order.

    Raises:
      ShardFailureError: a document's shard is unavailable (never None for
        a document that may exist), after the retries.
    """
    if not doc_ids:
      return []
    return self._retrying('mget', self._mget, list(doc_ids))

  def _mget(self, doc_ids: list[str]) -> list[Document | None]:
    response = self._client.call(
        'mget',
        self._client.raw.mget,
        index=self._names['doc'],
        body={'ids': doc_ids},
    )
    out = []
    for d in response['docs']:
      if 'error' in d:
        raise ShardFailureError(
            f'reading document {d.get("_id")!r} from {self._names["doc"]}'
            f' failed: {str(d["error"])[:300]}'
        )
      out.append(
          es_bodies.document_from_source(d['_source'])
          if d.get('found')
          else None
      )
    return out

  def num_documents(self) -> int:
    return self._retrying('count', self._count)

  def _count(self) -> int:
    response = self._client.call(
        'count', self._client.raw.count, index=self._names['doc']
    )
    _check_answer(response, f'counting {self._names["doc"]}')
    return int(response['count'])

  def close(self) -> None:
    self._client.close()


def _check_answer(answer: dict[str, Any], what: str) -> None:
  """Raises unless `answer` (one search's) heard from every shard in time.

  Raises:
    ShardFailureError: shards failed or timed out, or the search was
      refused with a transient status (503: no shard copy available).
    BackendError: the search was refused for another reason.
  """
  if 'error' in answer:
    status = answer.get('status', 0)
    error = f'{what} failed ({status}): {str(answer["error"])[:400]}'
    if status in TRANSIENT_STATUSES or status == 0:
      raise ShardFailureError(error)
    raise BackendError(error)
  shards = answer.get('_shards') or {}
  if shards.get('failed', 0) or answer.get('timed_out'):
    failures = [
        f.get('reason', {}).get('type', str(f))
        for f in shards.get('failures', [])
    ]
    raise ShardFailureError(
        f'{what} heard from {shards.get("successful")} of'
        f' {shards.get("total")} shards'
        f'{" and timed out" if answer.get("timed_out") else ""}'
        f' ({", ".join(sorted(set(failures))) or "no reason given"}); its'
        " answer would be partial. A replica serves a lost node's shards:"
        ' build with index.replicas >= 1'
    )


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
  hosts = cluster.pop('hosts', ClusterConfig.hosts)
  if isinstance(hosts, str):  # --config...hosts=http://a:9200,http://b:9200
    hosts = [h.strip() for h in hosts.split(',') if h.strip()]
  hosts = tuple(hosts)
  index = dict(config.index)
  return EsIndexConfig(
      cluster=ClusterConfig(hosts=hosts, **cluster),
      index_prefix=index.pop('prefix'),
      bulk=es_bulk.BulkConfig(**dict(config.bulk)),
      **index,
  )
