r"""Benchmarks the Elasticsearch cluster path against one node (not a test).

  ELASTICSEARCH_PORT=9301 ELASTICSEARCH_NODES=3 bash launch/elasticsearch.sh start
  bash launch/elasticsearch.sh start
  bash launch/lucene_views.sh build        # for the lucene layout
  PYTHONPATH=. .venv/bin/python tests/bench/bench_es_cluster.py \
      [--synthetic 20000] [--queries 300] \
      [--layouts single,cluster,cluster1,lucene] [--streams 1,3] \
      [--single http://127.0.0.1:9201] \
      [--cluster http://127.0.0.1:9301,http://127.0.0.1:9302,http://127.0.0.1:9303]

Builds a synthetic corpus (`corpus/synthetic.py`) per layout: `single` (the
single node, 1 shard, 0 replicas), `cluster` (the 3-node cluster, 3 shards,
1 replica), `cluster1` (the same cluster, 1 shard, 1 replica: the cost of
the shard fan-out, same JVMs) and `lucene` (the embedded Lucene backend,
`search/lucene_backend.py`, in this process), an Elasticsearch layout once
per bulk stream count of `--streams`. Then, on the last build of each
layout, times the three views alone (`view_rankings`) with exact scores
(dfs_query_then_fetch) and without (Elasticsearch only), and the fused
pipeline with snippets (`SearchEngine.search`, the engine settings of
tpu_configs/search/serve.py), at 1 and 16 concurrent clients. Prints one
JSON object per measurement; the `bench-cluster-*` indices are deleted
after.
"""

import argparse
import dataclasses
import json
import pathlib
import tempfile
import time

from search_agent.corpus import synthetic
from search_agent.search import benchmark
from search_agent.search import es_backend
from search_agent.search import es_bulk
from search_agent.search import es_client
from search_agent.search import lucene_index
from search_agent.search import service
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.parser import parse_query
from tpu_configs.search import serve

ENGINE = service.engine_config(serve.get_config())


def _config(hosts, prefix, shards, replicas, streams):
  return es_backend.EsIndexConfig(
      cluster=es_client.ClusterConfig(
          flavor='elasticsearch',
          hosts=tuple(hosts),
          client_retries=len(hosts),
          request_timeout_s=120,
      ),
      index_prefix=prefix,
      shards=shards,
      replicas=replicas,
      bulk=es_bulk.BulkConfig(streams=streams),
  )


def _latency(name, call, texts, concurrency):
  r = benchmark.measure_latency(name, call, texts, concurrency, warmup=20)
  return {k: v for k, v in r.__dict__.items() if k != 'name'}


def _measure_engine(layout, engine, texts):
  """The views alone and the fused pipeline with snippets, 1 and 16
  clients, through `engine`."""
  out = []
  views = lambda t: engine.backend.view_rankings([parse_query(t)], 10)
  fused = lambda t: engine.search([t], 10)
  for what, call in (('3 views', views), ('fused + snippets', fused)):
    for c in (1, 16):
      out.append(
          {
              'layout': layout,
              'what': what,
              'clients': c,
              **_latency(what, call, texts, c),
          }
      )
  return out


def _lucene(docs, texts):
  """Builds the embedded Lucene views of `docs` and measures them."""
  with tempfile.TemporaryDirectory(prefix='bench-lucene-') as tmp:
    index_dir = pathlib.Path(tmp) / 'index'
    t0 = time.perf_counter()
    with lucene_index.LuceneIndexWriter(index_dir, IndexBuildConfig()) as w:
      w.add_all(docs)
    seconds = time.perf_counter() - t0
    yield {
        'layout': 'embedded lucene',
        'what': 'build',
        'streams': 1,
        'documents': w.counts['doc'],
        'passages': w.counts['passage'],
        'seconds': round(seconds, 1),
        'docs_per_s': round(w.counts['doc'] / seconds, 1),
    }
    engine = lucene_engine(index_dir, ENGINE)
    try:
      yield from _measure_engine('embedded lucene', engine, texts)
    finally:
      engine.close()


def _measure(layout, config, texts):
  out = []
  for exact in (True, False):
    backend = es_backend.EsBackend(
        dataclasses.replace(config, exact_scores=exact)
    )
    call = lambda t, b=backend: b.view_rankings([parse_query(t)], 10)
    for c in (1, 16):
      out.append(
          {
              'layout': layout,
              'what': '3 views' + (' (dfs)' if exact else ' (no dfs)'),
              'clients': c,
              **_latency('views', call, texts, c),
          }
      )
    backend.close()
  engine = SearchEngine(es_backend.EsBackend(config), ENGINE)
  call = lambda t: engine.search([t], 10)
  for c in (1, 16):
    out.append(
        {
            'layout': layout,
            'what': 'fused + snippets (dfs)',
            'clients': c,
            **_latency('fused', call, texts, c),
        }
    )
  engine.close()
  return out


def _delete(hosts, prefix):
  client = es_client.SearchClient(
      es_client.ClusterConfig(flavor='elasticsearch', hosts=tuple(hosts))
  )
  names = sorted(client.raw.indices.get(index=f'{prefix}-*'))
  if names:
    client.raw.indices.delete(index=','.join(names))
  client.close()


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--synthetic', type=int, default=20_000)
  parser.add_argument('--queries', type=int, default=300)
  parser.add_argument('--layouts', default='single,cluster')
  parser.add_argument('--streams', default='1,3')
  parser.add_argument('--single', default='http://127.0.0.1:9201')
  parser.add_argument(
      '--cluster',
      default='http://127.0.0.1:9301,http://127.0.0.1:9302,http://127.0.0.1:9303',
  )
  args = parser.parse_args()
  docs = list(
      synthetic.iter_documents(synthetic.SyntheticSpec(num_docs=args.synthetic))
  )
  texts = synthetic.sample_queries(args.queries)
  layouts = {
      'single': ('single node 1x0', [args.single], 1, 0),
      'cluster': ('cluster 3x1', args.cluster.split(','), 3, 1),
      'cluster1': ('cluster 1x1', args.cluster.split(','), 1, 1),
  }
  stream_counts = [int(n) for n in args.streams.split(',')]
  for key in args.layouts.split(','):
    if key == 'lucene':
      for row in _lucene(docs, texts):
        print(json.dumps(row), flush=True)
      continue
    layout, hosts, shards, replicas = layouts[key]
    for streams in stream_counts:
      prefix = f'bench-cluster-{shards}x{replicas}-s{streams}'
      _delete(hosts, prefix)
      config = _config(hosts, prefix, shards, replicas, streams)
      t0 = time.perf_counter()
      stats = es_backend.build_es_index(config, docs, IndexBuildConfig())
      seconds = time.perf_counter() - t0
      print(
          json.dumps(
              {
                  'layout': layout,
                  'what': 'build',
                  'streams': streams,
                  'documents': stats['documents'],
                  'passages': stats['passages'],
                  'seconds': round(seconds, 1),
                  'docs_per_s': round(stats['documents'] / seconds, 1),
                  'actions_per_s': round(stats['actions'] / seconds, 1),
              }
          ),
          flush=True,
      )
      if streams == stream_counts[-1]:
        for row in _measure(layout, config, texts):
          print(json.dumps(row), flush=True)
      _delete(hosts, prefix)


if __name__ == '__main__':
  main()
