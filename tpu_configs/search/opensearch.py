"""The Elasticsearch/OpenSearch search backend: cluster, indices, bulk load.

Usage: --config=tpu_configs/search/opensearch.py (the bundled corpus on the
local node of `launch/opensearch.sh`) or tpu_configs/search/opensearch.py:tiny
(small chunks, short timeouts: tests and a 2-core CPU). Turned into
`es_backend.EsIndexConfig` by `es_backend.es_index_config(config)` and into
`backend.IndexBuildConfig` by `IndexBuildConfig(**config.build)`.
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the config; arg 'tiny' shrinks it for CPU tests."""
  c = ml_collections.ConfigDict()
  c.backend = 'opensearch'
  c.cluster = ml_collections.ConfigDict(
      dict(
          # 'opensearch' (opensearch-py) or 'elasticsearch' (the official
          # elasticsearch client). The request bodies are the same.
          flavor='opensearch',
          # Node URLs; launch/opensearch.sh serves http://127.0.0.1:9200.
          hosts=('http://127.0.0.1:9200',),
          request_timeout_s=30.0,
          # Retries the client makes itself on connection errors/timeouts.
          client_retries=1,
          # HTTP connections per node (concurrent calls that need not wait).
          connections=16,
      )
  )
  c.index = ml_collections.ConfigDict(
      dict(
          # Indices are <prefix>-doc and <prefix>-passage.
          prefix='search-agent-2wiki',
          # BM25 statistics are per shard: 1 shard ranks exactly like the
          # embedded tantivy backend; use more past ~50 GB per index.
          shards=1,
          replicas=0,  # a single node can hold no replica
      )
  )
  c.bulk = ml_collections.ConfigDict(
      dict(
          actions_per_request=1000,  # documents + passages per _bulk
          max_retries=8,  # on 429/502/503/504 or an unreachable node
          initial_backoff_s=0.5,  # doubles each retry
          max_backoff_s=30.0,
      )
  )
  # The views: same fields and defaults as backend.IndexBuildConfig.
  c.build = ml_collections.ConfigDict(
      dict(
          passage_window_words=128,
          passage_stride_words=96,
          remove_stopwords=True,
          stem=True,
      )
  )
  if arg == 'tiny':
    c.index.prefix = 'search-agent-tiny'
    c.cluster.request_timeout_s = 10.0
    c.bulk.actions_per_request = 200
    c.bulk.max_retries = 3
    c.bulk.initial_backoff_s = 0.1
    c.build.passage_window_words = 64
    c.build.passage_stride_words = 48
  elif arg:
    raise ValueError(f"unknown variant {arg!r}; use '' or 'tiny'")
  return c
