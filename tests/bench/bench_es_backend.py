r"""Benchmarks the Elasticsearch/OpenSearch backend, flavors side by side.

  bash launch/opensearch.sh start; bash launch/elasticsearch.sh start
  PYTHONPATH=. .venv/bin/python tests/bench/bench_es_backend.py \
      [--flavors opensearch,elasticsearch] [--synthetic 100000] [--queries N]

For each corpus (the bundled 2Wiki corpus, and `--synthetic` generated
documents when > 0) and each flavor in the same run: builds the corpus into
`bench-es-*` indices (deleted after), then times `view_rankings` (the three
views, one `_msearch` per call) for single queries at concurrency 1 and 16,
and for batches of 16 queries. Prints one JSON object per (corpus, flavor):
build docs/s, latency p50/p99, QPS, node RSS.
"""

import argparse
import json
import pathlib
import re
import time

import psutil

from search_agent.corpus import synthetic
from search_agent.corpus import twowiki
from search_agent.search import benchmark
from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.parser import parse_query

REPO = pathlib.Path(__file__).resolve().parents[2]


def _queries(docs, n):
  words = re.compile(r'[A-Za-z]{4,}')
  step = max(1, len(docs) // n)
  return [
      ' '.join([re.sub(r'[^\w ]', ' ', d.title)] + words.findall(d.text)[3:7])
      for d in docs[::step][:n]
  ]


URLS = {
    'opensearch': 'http://127.0.0.1:9200',
    'elasticsearch': 'http://127.0.0.1:9201',
}


def _node_rss_mb(flavor: str) -> float | None:
  pidfile = REPO / 'build' / flavor / 'node.pid'
  if not pidfile.is_file():
    return None
  return round(
      psutil.Process(int(pidfile.read_text())).memory_info().rss / 2**20
  )


def _bench(flavor: str, docs, texts: list[str]) -> dict:
  config = es_backend.EsIndexConfig(
      cluster=es_client.ClusterConfig(flavor=flavor, hosts=(URLS[flavor],)),
      index_prefix='bench-es',
  )
  stats = es_backend.build_es_index(
      config, docs, IndexBuildConfig(), overwrite=True
  )
  backend = es_backend.EsBackend(config)
  single = lambda t: backend.view_rankings([parse_query(t)], 10)
  batches = [texts[i : i + 16] for i in range(0, len(texts), 16)]
  t0 = time.perf_counter()
  for b in batches:
    backend.view_rankings([parse_query(t) for t in b], 10)
  batch_qps = len(texts) / (time.perf_counter() - t0)
  runs = [
      benchmark.measure_latency('3 views', single, texts, c, warmup=20)
      for c in (1, 16)
  ]
  out = {
      'flavor': flavor,
      'version': backend._client.check_cluster()['version']['number'],
      'documents': stats['documents'],
      'build_docs_per_s': round(stats['documents'] / stats['seconds']),
      'build_actions_per_s': round(stats['actions'] / stats['seconds']),
      'latency': [r.__dict__ for r in runs],
      'batch16_qps': round(batch_qps, 1),
      'node_rss_mb': _node_rss_mb(flavor),
  }
  raw = backend._client.raw
  names = sorted(raw.indices.get(index='bench-es-*'))
  raw.indices.delete(index=','.join(names))
  backend.close()
  return out


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--flavors', default='opensearch,elasticsearch')
  parser.add_argument('--synthetic', type=int, default=100_000)
  parser.add_argument('--queries', type=int, default=500)
  args = parser.parse_args()
  flavors = args.flavors.split(',')
  docs = twowiki.read_2wiki()
  corpora = [('bundled_2wiki', docs, _queries(docs, args.queries))]
  if args.synthetic > 0:
    spec = synthetic.SyntheticSpec(num_docs=args.synthetic)
    corpora.append(
        (
            f'synthetic_{args.synthetic}',
            list(synthetic.iter_documents(spec)),
            synthetic.sample_queries(args.queries),
        )
    )
  for name, corpus, texts in corpora:
    for flavor in flavors:
      print(json.dumps({'corpus': name, **_bench(flavor, corpus, texts)}))


if __name__ == '__main__':
  main()
