"""Bulk loading against the real node, with a real transient failure.

The failure is the one a full disk causes in production: the index gets the
`read_only_allow_delete` block (what the flood-stage watermark sets), and
every write to it is refused with 429 until the block is lifted.
"""

import threading
import uuid

import pytest

from search_agent.corpus.record import Document
from search_agent.search import es_bodies
from search_agent.search import es_bulk
from search_agent.search import es_client
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig

BLOCK = 'index.blocks.read_only_allow_delete'


@pytest.fixture
def client(cluster):
  c = es_client.SearchClient(cluster.config())
  yield c
  c.close()


@pytest.fixture
def doc_index(client):
  name = f'test-bulk-{uuid.uuid4().hex[:8]}-doc'
  body = es_bodies.create_index_body(
      'doc', IndexBuildConfig(), shards=1, replicas=0
  )
  client.raw.indices.create(index=name, body=body)
  yield name
  client.raw.indices.delete(index=name)


def _actions(index: str, n: int):
  for i in range(n):
    doc = Document(
        doc_id=f'd{i}', title=f'T{i}', url=f'https://x.org/{i}', text='w x'
    )
    yield {'index': {'_index': index, '_id': doc.doc_id}}, es_bodies.doc_source(
        doc
    )


def _set_block(client, index: str, value) -> None:
  client.raw.indices.put_settings(index=index, body={BLOCK: value})


def _count(client, index: str) -> int:
  client.raw.indices.refresh(index=index)
  return client.raw.count(index=index)['count']


def test_blocked_index_is_retried_until_the_block_lifts(client, doc_index):
  _set_block(client, doc_index, True)
  lift = threading.Timer(1.0, _set_block, (client, doc_index, None))
  lift.start()
  try:
    config = es_bulk.BulkConfig(
        actions_per_request=40, max_retries=8, initial_backoff_s=0.2
    )
    seen = []
    stats = es_bulk.bulk_load(
        client, _actions(doc_index, 100), config, progress=seen.append
    )
  finally:
    lift.join()
  assert stats.indexed == 100
  assert stats.retried >= 40  # at least the first chunk went twice
  assert stats.requests > 3
  assert len(seen) == 3  # one progress call per chunk
  assert _count(client, doc_index) == 100


def test_block_that_never_lifts_fails_after_the_retries(client, doc_index):
  _set_block(client, doc_index, True)
  try:
    config = es_bulk.BulkConfig(max_retries=2, initial_backoff_s=0.01)
    with pytest.raises(BackendError, match='after 2 retries.*429') as e:
      es_bulk.bulk_load(client, _actions(doc_index, 5), config)
    assert 'read-only-allow-delete' in str(e.value)
  finally:
    _set_block(client, doc_index, None)


def test_mapping_error_fails_at_once_with_its_reason(client, doc_index):
  stats = es_bulk.BulkStats()
  bad = ({'index': {'_index': doc_index, '_id': 'bad'}}, {'surprise': 1})
  with pytest.raises(BackendError, match='status 400.*strict_dynamic'):
    es_bulk.send_with_retries(
        client, [bad], es_bulk.BulkConfig(max_retries=3), stats
    )
  assert stats.requests == 1
