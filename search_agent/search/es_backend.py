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
import datetime
import hashlib
import json
import logging
import math
import time
from typing import Any, Callable, Iterable, Sequence
import uuid

from search_agent.corpus.record import Document
from search_agent.search import es_bodies
from search_agent.search import es_bulk
from search_agent.search import es_indices
from search_agent.search import es_load
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
    force_merge_segments: Force-merge each shard to this many segments
      before the replicas are made (0: no force-merge).
    resume: Resume an unfinished build of the same corpus and layout
      instead of starting over.
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
  force_merge_segments: int = 0
  resume: bool = True

  def __post_init__(self):
    if self.shards < 1 or self.replicas < 0 or self.queries_per_msearch < 1:
      raise ValueError(
          'need shards >= 1, replicas >= 0 and queries_per_msearch >= 1, got'
          f' {self.shards}, {self.replicas}, {self.queries_per_msearch}'
      )
    if self.search_retries < 0:
      raise ValueError(f'search_retries must be >= 0: {self.search_retries}')


def _fingerprint(config: EsIndexConfig, build: IndexBuildConfig, source) -> str:
  """What a resumed build must share with the run it resumes."""
  what = {
      'build': dict(build.__dict__),
      'shards': config.shards,
      'streams': config.bulk.streams,
      'source': source,
  }
  return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _new_build_id() -> str:
  now = datetime.datetime.now(datetime.timezone.utc)
  return f'{now:%Y%m%d%H%M%S}-{uuid.uuid4().hex[:6]}'


def build_es_index(
    config: EsIndexConfig,
    docs: Iterable[Document],
    build: IndexBuildConfig,
    *,
    overwrite: bool = False,
    progress: Callable[[es_bulk.BulkStats], None] | None = None,
    source: str = '',
    on_loaded: Callable[[dict[str, Any], dict[str, str]], None] | None = None,
) -> dict[str, Any]:
  """Creates the indices for `docs`, loads them and swaps them in.

  The build writes indices of its own (`es_indices.physical_names`) with
  no replica, in `config.bulk.streams` parallel streams; then it
  force-merges (if asked), raises the replicas, waits for green and points
  the aliases `<prefix>-doc` / `<prefix>-passage` at them in one atomic
  step, deleting the indices they pointed at before. A build that stopped
  half-way (killed, a node lost) is resumed by the next run with the same
  corpus, layout and build config (`config.resume`; see `es_load`).

  Args:
    config: Cluster and index layout.
    docs: The corpus, doc_ids unique (a duplicate is refused past
      `config.bulk.max_duplicates`; which copy is kept is not defined with
      several streams).
    build: Passage window/stride and analysis (stopwords, stemming).
    overwrite: Replace the indices of that prefix, if any, once the new
      ones are green; otherwise an existing index is an error.
    progress: Called after each bulk request with the running stats.
    source: What the corpus is (e.g. its spec as JSON): a resumed build
      must have the same.
    on_loaded: Called with the result and the new indices once they are
      green, before they are swapped in (e.g. to store a manifest).

  Returns:
    Counts and timings: {'documents', 'passages', 'actions' (the index's
    rows), 'indexed' (rows written by this run), 'requests', 'retried',
    'duplicates', 'resumed', 'skipped_docs', 'bytes', 'seconds',
    'build_id', 'indices'}.

  Raises:
    BackendError: the cluster is unreachable or too small for the replicas,
      the indices exist (without overwrite), or loading failed.
  """
  client = SearchClient(config.cluster)
  prefix = config.index_prefix
  state = es_load.BuildState(client, prefix)
  t0 = time.monotonic()
  try:
    client.check_cluster()
    es_indices.check_room_for_replicas(client, config.replicas)
    old = es_indices.serving(client, prefix)
    if any(old.values()) and not overwrite:
      name = es_bodies.index_names(prefix)[next(k for k in old if old[k])]
      raise BackendError(
          f'index {name} already exists; pick another index_prefix or'
          ' rebuild with overwrite'
      )
    fingerprint = _fingerprint(config, build, source)
    build_id, names, resume = _resume_or_create(
        client, config, build, state, fingerprint
    )
    stats = es_load.load(
        client,
        docs,
        build,
        names,
        config.bulk,
        state=state,
        resume=resume,
        progress=progress,
    )
    es_indices.finish_load(
        client,
        list(names.values()),
        replicas=config.replicas,
        green_timeout_s=config.green_timeout_s,
        merge_segments=config.force_merge_segments,
    )
    count = {
        kind: int(client.call('count', client.raw.count, index=name)['count'])
        for kind, name in names.items()
    }
    result = {
        'documents': count['doc'],
        'passages': count['passage'],
        'actions': count['doc'] + count['passage'],
        'indexed': stats.indexed,
        'requests': stats.requests,
        'retried': stats.retried,
        'duplicates': stats.duplicates,
        'resumed': stats.resumed,
        'skipped_docs': stats.skipped_docs,
        'bytes': stats.bytes,
        'build_id': build_id,
        'indices': dict(names),
    }
    if on_loaded:
      on_loaded(result, names)
    es_indices.swap_aliases(client, prefix, names, old)
    state.delete()
  finally:
    client.close()
  result['seconds'] = time.monotonic() - t0
  logging.info(
      'indexed %d documents (%d passages, %d rows written by this run, %d'
      ' duplicates, %d documents resumed) into %s in %.1f s',
      result['documents'],
      result['passages'],
      stats.indexed,
      stats.duplicates,
      stats.skipped_docs,
      ', '.join(names.values()),
      result['seconds'],
  )
  return result


def _resume_or_create(client, config, build, state, fingerprint):
  """(build id, physical index names, checkpoints or None): an unfinished
  build of the same fingerprint to resume, else new, empty indices."""
  raw = client.raw
  previous = state.read()
  if previous:
    names = es_indices.physical_names(config.index_prefix, previous['build_id'])
    exist = all(
        client.call('exists', raw.indices.exists, index=n)
        for n in names.values()
    )
    if config.resume and exist and previous['fingerprint'] == fingerprint:
      resume = state.checkpoints(config.bulk.streams)
      logging.info(
          'resuming build %s at %s documents per stream',
          previous['build_id'],
          [c.done for c in resume],
      )
      return previous['build_id'], names, resume
    logging.info(
        'discarding the unfinished build %s (%s)',
        previous['build_id'],
        'resume is off'
        if not config.resume
        else 'another corpus or layout'
        if exist
        else 'its indices are gone',
    )
    for name in names.values():
      if client.call('exists', raw.indices.exists, index=name):
        client.call('delete index', raw.indices.delete, index=name)
  build_id = _new_build_id()
  names = es_indices.physical_names(config.index_prefix, build_id)
  for kind, name in names.items():
    body = es_bodies.create_index_body(
        kind, build, shards=config.shards, replicas=0
    )
    client.call('create index', raw.indices.create, index=name, body=body)
  state.start(build_id, fingerprint, config.bulk.streams)
  return build_id, names, None


class EsBackend:
  """`SearchBackend` over indices built by `build_es_index`."""

  def __init__(self, config: EsIndexConfig):
    self._config = config
    self._client = SearchClient(config.cluster)
    self._batch = config.queries_per_msearch
    self._names = es_bodies.index_names(config.index_prefix)
    self._idf: dict[str, float] = {}
    self._idf_n: int | None = None
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

  def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
    """BM25 idf of index terms in the doc view, for snippet scoring (as
    tantivy's and Lucene's `term_idf`: the same snippets on any backend).

    A term's document frequency is counted once (one `_msearch` of
    `size: 0` term counts for the terms not seen yet) and kept, as is the
    document count: they describe the index this backend opened.

    Raises:
      ShardFailureError: a count missed a shard, after the retries.
    """
    terms = list(terms)
    idf = {t: self._idf[t] for t in terms if t in self._idf}
    new = [t for t in dict.fromkeys(terms) if t not in idf]
    if new:
      if self._idf_n is None:
        self._idf_n = self.num_documents()
      n = self._idf_n
      dfs = self._retrying('doc freqs', self._doc_freqs, new)
      for t, df in zip(new, dfs):
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        if len(self._idf) < _IDF_CACHE_TERMS:
          self._idf[t] = idf[t]
    return idf

  def _doc_freqs(self, terms: list[str]) -> list[int]:
    header = {
        'index': self._names['doc'],
        'allow_partial_search_results': False,
    }
    body = []
    for t in terms:
      body.append(header)
      body.append(
          {
              'size': 0,
              'track_total_hits': True,
              'query': {'term': {es_bodies.VIEW_FIELDS['doc']: t}},
          }
      )
    response = self._client.call('msearch', self._client.raw.msearch, body=body)
    out = []
    for t, answer in zip(terms, response['responses']):
      _check_answer(answer, f'document frequency of {t!r}')
      out.append(int(answer['hits']['total']['value']))
    return out

  def _count(self) -> int:
    response = self._client.call(
        'count', self._client.raw.count, index=self._names['doc']
    )
    _check_answer(response, f'counting {self._names["doc"]}')
    return int(response['count'])

  def close(self) -> None:
    self._client.close()


# How many terms' idf a backend keeps (then each new term is counted).
_IDF_CACHE_TERMS = 1_000_000


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
