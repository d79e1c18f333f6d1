"""Errors from the Elasticsearch/OpenSearch clients become BackendError."""

import socket
import time

import pytest

from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig


def _closed_port() -> int:
  """A loopback port nothing listens on (bound, then released)."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@pytest.mark.parametrize('flavor', es_client.FLAVORS)
def test_unreachable_cluster_is_a_clear_backend_error(flavor):
  cluster = es_client.ClusterConfig(
      flavor=flavor,
      hosts=(f'http://127.0.0.1:{_closed_port()}',),
      request_timeout_s=2,
      client_retries=0,
  )
  t0 = time.monotonic()
  with pytest.raises(BackendError, match='cannot reach the .* cluster at') as e:
    es_backend.EsBackend(es_backend.EsIndexConfig(cluster=cluster))
  assert 'launch/opensearch.sh start' in str(e.value)
  assert isinstance(e.value, es_client.TransientError)
  assert time.monotonic() - t0 < 10


def test_build_on_unreachable_cluster_fails_before_reading_docs():
  cluster = es_client.ClusterConfig(
      hosts=(f'http://127.0.0.1:{_closed_port()}',), client_retries=0
  )

  def docs():
    raise AssertionError('documents were read before the cluster answered')
    yield  # pylint: disable=unreachable

  with pytest.raises(BackendError, match='cannot reach'):
    es_backend.build_es_index(
        es_backend.EsIndexConfig(cluster=cluster), docs(), IndexBuildConfig()
    )


@pytest.mark.opensearch
def test_elasticsearch_client_on_opensearch_says_which_flavor(opensearch_url):
  cluster = es_client.ClusterConfig(
      flavor='elasticsearch', hosts=(opensearch_url,)
  )
  with pytest.raises(BackendError, match='flavor=opensearch'):
    es_backend.EsBackend(es_backend.EsIndexConfig(cluster=cluster))


@pytest.mark.opensearch
def test_bad_request_is_not_transient(opensearch_url):
  client = es_client.SearchClient(
      es_client.ClusterConfig(hosts=(opensearch_url,))
  )
  try:
    with pytest.raises(BackendError, match='status 4') as e:
      client.call(
          'search',
          client.raw.search,
          index='test-no-such-index',
          body={'query': {'match_all': {}}},
      )
    assert not isinstance(e.value, es_client.TransientError)
  finally:
    client.close()


def test_config_validation():
  with pytest.raises(ValueError, match='flavor must be one of'):
    es_client.ClusterConfig(flavor='solr')
  with pytest.raises(ValueError, match='hosts is empty'):
    es_client.ClusterConfig(hosts=())
