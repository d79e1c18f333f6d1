"""The scalable build: parallel streams, byte-sized requests, duplicates
reported by `op_type: create`, force-merge, aliases swapped atomically.

Against each flavor's real node (`cluster`); the resumable build (SIGKILL
mid-load) is in test_es_resume.py.
"""

import dataclasses
import threading
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document
from search_agent.search import es_backend
from search_agent.search import es_bulk
from search_agent.search import es_client
from search_agent.search import es_indices
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.parser import parse_query

BUILD = IndexBuildConfig(passage_window_words=40, passage_stride_words=30)


def _item(n: int) -> es_bulk.Item:
  return es_bulk.Item(ndjson=b'x' * n, what=f'item {n}')


def test_requests_are_cut_by_bytes_and_count():
  config = es_bulk.BulkConfig(
      chunk_bytes=100, max_request_bytes=1000, actions_per_request=3
  )
  sizes = [[len(i.ndjson) for i in r] for r in es_bulk._requests(
      [_item(n) for n in (60, 30, 20, 500, 10, 10, 10, 10)], config
  )]  # fmt: skip
  # 60+30 fits, +20 passes 100; one action alone may pass chunk_bytes.
  assert sizes == [[60, 30], [20], [500], [10, 10, 10], [10]]
  with pytest.raises(BackendError, match='http.max_content_length'):
    es_bulk._requests([_item(1001)], config)


def test_config_refuses_a_chunk_larger_than_a_request():
  with pytest.raises(ValueError, match='chunk_bytes <= max_request_bytes'):
    es_bulk.BulkConfig(chunk_bytes=10, max_request_bytes=5)
  with pytest.raises(ValueError, match='streams >= 1'):
    es_bulk.BulkConfig(streams=0)


@pytest.fixture(scope='module')
def corpus() -> list[Document]:
  return twowiki.read_2wiki()[:300]


def _config(cluster, **bulk) -> es_backend.EsIndexConfig:
  return es_backend.EsIndexConfig(
      cluster=cluster.config(),
      index_prefix=f'test-load-{uuid.uuid4().hex[:8]}',
      bulk=es_bulk.BulkConfig(**bulk),
  )


def _ids(cluster, index: str) -> list[str]:
  raw = cluster.raw()
  hits = raw.search(
      index=index, body={'size': 10000, '_source': False, 'sort': ['_doc']}
  )['hits']['hits']
  raw.close()
  return sorted(h['_id'] for h in hits)


def test_parallel_streams_and_small_chunks_index_everything_once(
    cluster, corpus
):
  one = _config(cluster, streams=1)
  many = _config(cluster, streams=3, chunk_bytes=20_000)
  try:
    a = es_backend.build_es_index(one, corpus, BUILD)
    b = es_backend.build_es_index(many, corpus, BUILD)
    assert a['documents'] == b['documents'] == len(corpus)
    assert a['passages'] == b['passages'] > len(corpus)
    assert b['indexed'] == b['actions'] == a['actions']
    assert b['requests'] > 3 * a['requests']
    assert b['bytes'] > a['actions'] * 100
    assert b['duplicates'] == b['resumed'] == b['skipped_docs'] == 0
    for kind in ('doc', 'passage'):
      assert _ids(cluster, f'{one.index_prefix}-{kind}') == _ids(
          cluster, f'{many.index_prefix}-{kind}'
      )
    queries = [parse_query(d.title) for d in corpus[::30]]
    x, y = es_backend.EsBackend(one), es_backend.EsBackend(many)
    assert x.view_scores(queries, 10) == y.view_scores(queries, 10)
    x.close()
    y.close()
  finally:
    cluster.delete_indices(one.index_prefix)
    cluster.delete_indices(many.index_prefix)


def test_duplicates_are_reported_and_the_first_copy_kept(cluster, corpus):
  copy = dataclasses.replace(corpus[5], title='A second copy')
  docs = corpus[:50] + [copy]
  config = _config(cluster, streams=1, max_duplicates=1)
  try:
    stats = es_backend.build_es_index(config, docs, BUILD)
    assert stats['duplicates'] == 1
    assert stats['documents'] == 50
    backend = es_backend.EsBackend(config)
    assert backend.get_documents([copy.doc_id]) == [corpus[5]]
    backend.close()
  finally:
    cluster.delete_indices(config.index_prefix)
  strict = _config(cluster, streams=1)
  try:
    with pytest.raises(BackendError, match='duplicate doc_id .*max_dup'):
      es_backend.build_es_index(strict, docs, BUILD)
  finally:
    cluster.delete_indices(strict.index_prefix)


def test_a_document_over_the_request_limit_stops_the_build(cluster, corpus):
  config = _config(cluster, chunk_bytes=2_000, max_request_bytes=2_000)
  big = dataclasses.replace(corpus[0], text='word ' * 2_000)
  try:
    with pytest.raises(BackendError, match='over max_request_bytes'):
      es_backend.build_es_index(config, [big], BUILD)
  finally:
    cluster.delete_indices(config.index_prefix)


def test_force_merge_leaves_one_segment_per_shard(cluster, corpus):
  config = dataclasses.replace(
      _config(cluster, streams=2, chunk_bytes=20_000), force_merge_segments=1
  )
  try:
    stats = es_backend.build_es_index(config, corpus, BUILD)
    raw = cluster.raw()
    segments = raw.indices.segments(index=stats['indices']['passage'])
    raw.close()
    (index,) = segments['indices'].values()
    for copies in index['shards'].values():
      for copy in copies:
        assert copy['num_committed_segments'] == 1
  finally:
    cluster.delete_indices(config.index_prefix)


def test_a_rebuild_swaps_in_atomically_under_searches(cluster, corpus):
  config = _config(cluster, streams=2)
  try:
    first = es_backend.build_es_index(config, corpus[:100], BUILD)
    backend = es_backend.EsBackend(config)
    with pytest.raises(BackendError, match='already exists'):
      es_backend.build_es_index(config, corpus, BUILD)
    query = [parse_query(corpus[150].title)]
    errors, sizes, stop = [], set(), threading.Event()

    def search():
      while not stop.is_set():
        try:
          sizes.add(backend.num_documents())
          backend.view_rankings(query, 10)
        except BackendError as e:  # pragma: no cover - the failure shown
          errors.append(e)

    searcher = threading.Thread(target=search)
    searcher.start()
    try:
      second = es_backend.build_es_index(config, corpus, BUILD, overwrite=True)
    finally:
      stop.set()
      searcher.join()
    assert errors == []
    assert sizes <= {100, 300}  # the old index or the new, never neither
    assert backend.num_documents() == 300
    assert second['build_id'] != first['build_id']
    raw = cluster.raw()
    for kind, index in first['indices'].items():
      assert not raw.indices.exists(index=index)
      aliases = raw.indices.get_alias(name=f'{config.index_prefix}-{kind}')
      assert list(aliases) == [second['indices'][kind]]
    assert not raw.indices.exists(index=f'{config.index_prefix}-build-state')
    raw.close()
    backend.close()
  finally:
    cluster.delete_indices(config.index_prefix)


def test_waiting_for_green_that_never_comes_is_a_clear_error(cluster):
  # One node cannot hold a replica: yellow for ever. Each health wait that
  # times out is answered 408, which must read as "not yet", not a refusal.
  config = dataclasses.replace(cluster.config(), request_timeout_s=6)
  client = es_client.SearchClient(config)
  name = f'test-yellow-{uuid.uuid4().hex[:8]}'
  client.raw.indices.create(
      index=name,
      body={'settings': {'number_of_shards': 1, 'number_of_replicas': 1}},
  )
  try:
    with pytest.raises(BackendError, match='not green after 3 s.*1 unassig'):
      es_indices.wait_green(client, [name], timeout_s=3)
  finally:
    client.raw.indices.delete(index=name)
    client.close()
