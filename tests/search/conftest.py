"""Fixtures for the search tests: the bundled corpus index, the clusters.

`wiki_index`/`wiki_engine`: the bundled 2Wiki corpus indexed once per test
session (tantivy, default build config, as `index.build` writes it).
Tests marked `opensearch` use the node that `launch/opensearch.sh start`
runs, tests marked `elasticsearch` the one `launch/elasticsearch.sh start`
runs, tests marked `elasticsearch_cluster` the 3-node cluster that
`ELASTICSEARCH_PORT=9301 ELASTICSEARCH_NODES=3 bash launch/elasticsearch.sh
start` runs (`launch/run_tests.sh` starts all three before pytest and stops
them after). `cluster` runs a test once per flavor, each against its own
real node.
"""

import dataclasses
import json
import os
import pathlib
import urllib.error
import urllib.request

import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search import es_client
from search_agent.search.engine import SearchEngine
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index


@pytest.fixture(scope='session')
def wiki_index(tmp_path_factory) -> pathlib.Path:
  """The bundled 2Wiki corpus (6,119 documents) as a tantivy index, built
  once per session with index.build's builder and default config (~3 s)."""
  path = tmp_path_factory.mktemp('bundled_2wiki') / 'index'
  build_tantivy_index(CorpusSpec(), path)
  return path


@pytest.fixture(scope='session')
def wiki_engine(wiki_index):
  """A SearchEngine over `wiki_index` with the default engine config and
  guard; shared by the whole session, so tests must not close or mutate
  it (wrap its backend in a new SearchEngine to change settings)."""
  engine: SearchEngine = tantivy_engine(wiki_index)
  yield engine
  engine.close()


def _healthy_url(product: str, url: str, start: str) -> str:
  """`url` (no trailing /) once its node is yellow/green; else fails."""
  url = url.rstrip('/')
  health = f'{url}/_cluster/health?wait_for_status=yellow&timeout=10s'
  try:
    with urllib.request.urlopen(health, timeout=15) as response:
      status = json.load(response).get('status')
  except (urllib.error.URLError, OSError, ValueError) as e:
    pytest.fail(
        f'no {product} node answers at {url} ({e}). Start one with `bash'
        f' launch/{start} start` (launch/run_tests.sh does it), or'
        f' point {product.upper()}_URL at a running node.'
    )
  if status not in ('yellow', 'green'):
    pytest.fail(f'the {product} node at {url} is {status!r}, not yellow/green')
  return url


@pytest.fixture(scope='session')
def opensearch_url() -> str:
  """URL of a running node: $OPENSEARCH_URL, else 127.0.0.1 on the port
  launch/opensearch.sh uses ($OPENSEARCH_PORT, default 9200)."""
  port = os.environ.get('OPENSEARCH_PORT', '9200')
  url = os.environ.get('OPENSEARCH_URL', f'http://127.0.0.1:{port}')
  return _healthy_url('OpenSearch', url, 'opensearch.sh')


@pytest.fixture(scope='session')
def elasticsearch_url() -> str:
  """URL of a running node: $ELASTICSEARCH_URL, else 127.0.0.1 on the port
  launch/elasticsearch.sh uses ($ELASTICSEARCH_PORT, default 9201)."""
  port = os.environ.get('ELASTICSEARCH_PORT', '9201')
  url = os.environ.get('ELASTICSEARCH_URL', f'http://127.0.0.1:{port}')
  return _healthy_url('Elasticsearch', url, 'elasticsearch.sh')


@pytest.fixture(scope='session')
def elasticsearch_cluster_urls() -> tuple[str, ...]:
  """HTTP URLs of the running 3-node Elasticsearch cluster.

  $ELASTICSEARCH_CLUSTER_URLS (comma-separated), else 127.0.0.1 on
  $ELASTICSEARCH_CLUSTER_PORT (default 9301) and the next two ports. Not
  running: a failure under CI (CI=true, where launch/run_tests.sh starts
  it), else the test is skipped with the command that starts it.
  """
  port = int(os.environ.get('ELASTICSEARCH_CLUSTER_PORT', '9301'))
  urls = os.environ.get('ELASTICSEARCH_CLUSTER_URLS', '')
  hosts = tuple(u.strip().rstrip('/') for u in urls.split(',') if u.strip())
  hosts = hosts or tuple(f'http://127.0.0.1:{port + i}' for i in range(3))
  health = f'{hosts[0]}/_cluster/health?wait_for_nodes=3&timeout=10s'
  try:
    with urllib.request.urlopen(health, timeout=15) as response:
      answer = json.load(response)
    problem = (
        ''
        if answer.get('number_of_nodes', 0) >= 3
        and answer.get('status') in ('yellow', 'green')
        else f'it has {answer.get("number_of_nodes")} nodes, status'
        f' {answer.get("status")!r}'
    )
  except (urllib.error.URLError, OSError, ValueError) as e:
    problem = f'no node answers ({e})'
  if problem:
    message = (
        f'no 3-node Elasticsearch cluster at {hosts[0]}: {problem}. Start'
        ' one with `ELASTICSEARCH_PORT=9301 ELASTICSEARCH_NODES=3 bash'
        ' launch/elasticsearch.sh start` (launch/run_tests.sh does it), or'
        ' set ELASTICSEARCH_CLUSTER_URLS'
    )
    if os.environ.get('CI') == 'true':
      pytest.fail(message)
    pytest.skip(message)
  return hosts


@dataclasses.dataclass(frozen=True)
class Cluster:
  """A running node of one flavor, as the tests reach it."""

  flavor: str
  url: str

  def config(self) -> es_client.ClusterConfig:
    return es_client.ClusterConfig(flavor=self.flavor, hosts=(self.url,))

  def raw(self):
    """The flavor's own Python client (opensearch-py or elasticsearch)."""
    return es_client.SearchClient(self.config()).raw

  def delete_indices(self, prefix: str) -> None:
    """Deletes every index named `prefix-*` (by name: Elasticsearch 9
    refuses wildcard deletes by default)."""
    raw = self.raw()
    names = sorted(raw.indices.get(index=f'{prefix}-*'))
    if names:
      raw.indices.delete(index=','.join(names))
    raw.close()


@pytest.fixture(
    scope='session',
    params=[
        pytest.param('opensearch', marks=pytest.mark.opensearch),
        pytest.param('elasticsearch', marks=pytest.mark.elasticsearch),
    ],
)
def cluster(request) -> Cluster:
  """Each flavor's real node in turn: OpenSearch 2, then Elasticsearch 9."""
  fixture = f'{request.param}_url'
  return Cluster(request.param, request.getfixturevalue(fixture))
