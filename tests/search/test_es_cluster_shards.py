"""Rankings on the 3-node Elasticsearch cluster do not depend on shards.

The bundled 2Wiki corpus (6,119 documents) is built three times on the
cluster `launch/run_tests.sh` starts: 1 shard, 2 shards, and 4 shards with
1 replica (raised after the load; the build waits for green). Every view's
top-10 doc_ids and BM25 scores, and the fused results through the search
engine, must be identical across the three: BM25 statistics are per shard
unless the search runs `dfs_query_then_fetch`, and Lucene breaks score ties
by shard and segment unless the sort does (`es_bodies.TIE_BREAK_SORT`).
"""

import json
import re
import subprocess
import sys
import urllib.request
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.search import calibration
from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.engine import SearchEngine
from search_agent.search.parser import parse_query

pytestmark = [pytest.mark.elasticsearch_cluster, pytest.mark.slow]

BUILD = IndexBuildConfig()
LAYOUTS = ((1, 0), (2, 0), (4, 1))
_WORD = re.compile(r'[A-Za-z]{4,}')


def _queries(docs, shared_data) -> list[str]:
  """Known-item topics, bare titles (the title view is mostly score ties)
  and long natural-language questions."""
  known, _ = calibration.make_known_item_topics(docs, 40)
  titles = [re.sub(r'[^\w ]', ' ', d.title) for d in docs[::300]]
  lines = (shared_data / 'qa' / 'webshaper.500.jsonl').read_text().splitlines()
  questions = [
      json.loads(x)['question'].replace('"', ' ')[:1000] for x in lines
  ]
  return list(known.values()) + titles + questions[:20]


@pytest.fixture(scope='module')
def builds(elasticsearch_cluster_urls):
  """{(shards, replicas): EsIndexConfig} of three builds of the corpus."""
  docs = twowiki.read_2wiki()
  cluster = es_client.ClusterConfig(
      flavor='elasticsearch',
      hosts=elasticsearch_cluster_urls,
      client_retries=3,
      request_timeout_s=60,
  )
  run = uuid.uuid4().hex[:8]
  configs = {}
  try:
    for shards, replicas in LAYOUTS:
      config = es_backend.EsIndexConfig(
          cluster=cluster,
          index_prefix=f'test-shards-{run}-{shards}x{replicas}',
          shards=shards,
          replicas=replicas,
      )
      configs[shards, replicas] = config
      es_backend.build_es_index(config, docs, BUILD)
    yield docs, configs
  finally:
    client = es_client.SearchClient(cluster)
    names = sorted(client.raw.indices.get(index=f'test-shards-{run}-*'))
    if names:
      client.raw.indices.delete(index=','.join(names))
    client.close()


def test_layouts_are_green_with_their_shards_and_replicas(
    builds, elasticsearch_cluster_urls
):
  _, configs = builds
  url = elasticsearch_cluster_urls[1]
  for (shards, replicas), config in configs.items():
    for kind in ('doc', 'passage'):
      alias = f'{config.index_prefix}-{kind}'
      with urllib.request.urlopen(f'{url}/_cluster/health/{alias}') as r:
        health = json.load(r)
      assert health['status'] == 'green', (alias, health)
      assert health['active_primary_shards'] == shards
      assert health['active_shards'] == shards * (1 + replicas)


def test_every_view_has_the_same_top10_and_scores_at_1_2_and_4_shards(
    builds, shared_data
):
  docs, configs = builds
  queries = [parse_query(q) for q in _queries(docs, shared_data)]
  assert len(queries) >= 80
  results = {}
  for layout, config in configs.items():
    backend = es_backend.EsBackend(config)
    results[layout] = backend.view_scores(queries, 10)
    backend.close()
  one = results[1, 0]
  assert sum(len(r['doc']) for r in one) >= 9 * len(queries)
  # Ties exist (titles), so the tie-break is exercised, not just the scores.
  ties = sum(len({s for _, s in r['title']}) < len(r['title']) for r in one)
  assert ties >= 10
  for layout in ((2, 0), (4, 1)):
    for q, a, b in zip(queries, one, results[layout]):
      for view in VIEWS:
        assert a[view] == b[view], (layout, view, q.raw)


def test_fused_results_are_the_same_at_1_and_4_shards(builds, shared_data):
  docs, configs = builds
  texts = _queries(docs, shared_data)[::3]
  fused = {}
  for layout in ((1, 0), (4, 1)):
    engine = SearchEngine(es_backend.EsBackend(configs[layout]))
    fused[layout] = [
        [(h.doc_id, h.score, h.snippet) for h in hits]
        for hits in engine.search(texts, 10)
    ]
    engine.close()
  assert fused[1, 0] == fused[4, 1]


def test_index_query_gives_the_same_top10_at_4_shards_as_at_1(
    builds, elasticsearch_cluster_urls, repo_root
):
  docs, configs = builds
  queries = [
      f'--query={re.sub(r"[^\w ]", " ", d.title)} born' for d in docs[::400]
  ]
  outputs = []
  for layout in ((1, 0), (4, 1)):
    out = subprocess.run(
        [
            sys.executable,
            '-m',
            'index.query',
            '--config=tpu_configs/search/serve.py',
            '--config.backend=opensearch',
            '--config.opensearch.cluster.flavor=elasticsearch',
            '--config.opensearch.cluster.hosts='
            f'{tuple(elasticsearch_cluster_urls)!r}',
            f'--config.opensearch.index.prefix={configs[layout].index_prefix}',
            '--k=10',
            *queries,
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    outputs.append(out.stdout)
  assert outputs[0] == outputs[1]
  assert outputs[0].count('=== ') == len(queries)
  assert outputs[0].count('<https://') >= 9 * len(queries)
