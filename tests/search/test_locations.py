"""Index locations: a tantivy directory, a cluster build's, or a URL."""

import pathlib
import subprocess
import sys
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.search import calibration
from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search import locations
from search_agent.search.tantivy_backend import TantivyBackend

HOSTS = ('http://127.0.0.1:9301', 'http://127.0.0.1:9302')
REPO = pathlib.Path(__file__).resolve().parents[2]


def test_a_location_names_flavor_nodes_prefix_and_settings():
  loc = locations.cluster_location('elasticsearch', HOSTS, 'idx')
  assert loc == 'elasticsearch://127.0.0.1:9301,127.0.0.1:9302/idx'
  assert locations.is_cluster(loc) and not locations.is_cluster('/tmp/x')
  config = locations.es_config(loc)
  assert config.cluster.flavor == 'elasticsearch'
  assert config.cluster.hosts == HOSTS and config.index_prefix == 'idx'
  tls = locations.es_config(
      'opensearch+https://a:9200,b:9200/p?ca_certs=/ca.pem'
      '&api_key_env=KEY&client_retries=3&verify_certs=false'
  )
  assert tls.cluster.hosts == ('https://a:9200', 'https://b:9200')
  assert tls.cluster.ca_certs == '/ca.pem' and tls.cluster.api_key_env == 'KEY'
  assert tls.cluster.client_retries == 3 and tls.cluster.verify_certs is False
  assert locations.es_config(locations.of_config(tls)) == tls
  assert (
      locations.cluster_location('opensearch', 'https://a:1, https://b:2', 'p')
      == 'opensearch+https://a:1,b:2/p'
  )
  # A config's location keeps only the settings off their defaults.
  plain = es_backend.EsIndexConfig(
      cluster=es_client.ClusterConfig(flavor='elasticsearch', hosts=HOSTS),
      index_prefix='idx',
  )
  assert locations.of_config(plain) == loc


@pytest.mark.parametrize(
    'location, match',
    [
        ('elasticsearch://a:1', 'PREFIX'),
        ('elasticsearch:///p', 'PREFIX'),
        ('elasticsearch+ftp://a:1/p', r'\+https'),
        ('elasticsearch://a:1/p?password=x', 'unknown parameter'),
        ('/tmp/index', 'not a cluster location'),
    ],
)
def test_a_malformed_location_is_refused(location, match):
  with pytest.raises(locations.LocationError, match=match):
    locations.es_config(location)


def test_mixed_schemes_or_a_prefix_with_a_slash_are_refused():
  with pytest.raises(locations.LocationError, match='http'):
    locations.cluster_location('opensearch', ('http://a:1', 'https://b:2'), 'p')
  with pytest.raises(locations.LocationError, match='prefix'):
    locations.cluster_location('opensearch', HOSTS, 'a/b')
  with pytest.raises(locations.LocationError, match='flavor'):
    locations.cluster_location('solr', HOSTS, 'p')


def test_a_directory_with_a_location_file_stands_for_the_cluster(tmp_path):
  assert locations.resolve(tmp_path) == ''
  loc = locations.cluster_location('elasticsearch', HOSTS, 'idx')
  path = locations.write(tmp_path / 'index', loc)
  assert path.name == locations.LOCATION_FILE
  assert locations.resolve(tmp_path / 'index') == loc
  assert locations.resolve(loc) == loc
  path.write_text('not a location\n')
  with pytest.raises(locations.LocationError, match='no cluster location'):
    locations.resolve(tmp_path / 'index')


def test_a_tantivy_directory_opens_as_before(wiki_index):
  engine = locations.open_engine(wiki_index)
  try:
    assert isinstance(engine.backend, TantivyBackend)
    assert engine.num_documents() == 6119
  finally:
    engine.close()


def _build(workdir, *overrides):
  run = subprocess.run(
      [
          sys.executable, '-m', 'index.build',
          '--config=tpu_configs/search/build.py:tiny', f'--workdir={workdir}',
          *overrides,
      ],
      cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
  )  # fmt: skip
  assert run.returncode == 0, run.stderr[-2000:]
  return workdir / 'index'


@pytest.mark.elasticsearch_cluster
@pytest.mark.slow
def test_index_build_on_the_cluster_leaves_a_directory_that_opens_it(
    elasticsearch_cluster_urls, tmp_path
):
  """`index.build` on the cluster, then the build's directory opens the
  cluster's indices, ranking and cutting snippets as the tantivy build of
  the same documents."""
  prefix = f'test-loc-{uuid.uuid4().hex[:8]}'
  cluster_dir = _build(
      tmp_path / 'cluster',
      '--config.backend=opensearch',
      '--config.opensearch.cluster.flavor=elasticsearch',
      f'--config.opensearch.cluster.hosts={tuple(elasticsearch_cluster_urls)!r}',
      f'--config.opensearch.index.prefix={prefix}',
      '--config.opensearch.index.shards=2',
  )
  tantivy_dir = _build(tmp_path / 'tantivy')
  assert locations.resolve(tantivy_dir) == ''
  # build.py:tiny's shorter client timeout travels with the location.
  assert (
      locations.resolve(cluster_dir)
      == locations.cluster_location(
          'elasticsearch', elasticsearch_cluster_urls, prefix
      )
      + '?request_timeout_s=10.0'
  )
  engine = locations.open_engine(cluster_dir)
  local = locations.open_engine(tantivy_dir)
  try:
    assert isinstance(engine.backend, es_backend.EsBackend)
    assert engine.num_documents() == local.num_documents() == 500
    docs = twowiki.read_2wiki()[:500]
    topics, _ = calibration.make_known_item_topics(docs, 40)
    queries = list(topics.values())
    ours, theirs = engine.search(queries, 10), local.search(queries, 10)
    overlap = [
        len({h.doc_id for h in a} & {h.doc_id for h in b}) / 10
        for a, b in zip(ours, theirs)
    ]
    assert sum(overlap) / len(overlap) >= 0.9, overlap
    # Snippets from corpus idf (EsBackend.term_idf), as tantivy's.
    same = [
        [(h.doc_id, h.snippet) for h in a] == [(h.doc_id, h.snippet) for h in b]
        for a, b in zip(ours, theirs)
    ]
    assert sum(same) >= 0.9 * len(same), sum(same)
  finally:
    local.close()
    engine.close()
    client = es_client.SearchClient(
        es_client.ClusterConfig(
            flavor='elasticsearch', hosts=elasticsearch_cluster_urls
        )
    )
    names = sorted(client.raw.indices.get(index=f'{prefix}-*'))
    if names:
      client.raw.indices.delete(index=','.join(names))
    client.close()
