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
          # A cluster: every node that may coordinate, e.g.
          # "('http://127.0.0.1:9301','http://127.0.0.1:9302')".
          hosts=('http://127.0.0.1:9200',),
          request_timeout_s=30.0,
          # Retries the client makes itself on connection errors/timeouts,
          # each on another node: at least the nodes that may be down.
          client_retries=1,
          # HTTP connections per node (concurrent calls that need not wait).
          connections=16,
          # Security (ES 8/9 and Elastic Cloud turn it on): names of the
          # environment variables holding the API key / password, never
          # the secrets; ca_certs: PEM of a private CA for https:// hosts.
          api_key_env='',
          username='',
          password_env='',
          ca_certs='',
          verify_certs=True,
      )
  )
  c.index = ml_collections.ConfigDict(
      dict(
          # Indices are <prefix>-doc and <prefix>-passage.
          prefix='search-agent-2wiki',
          # Primary shards per index: past ~50 GB or 2^31 rows, more.
          # Rankings do not depend on it (exact_scores).
          shards=1,
          # Set after the load, then the build waits for green: a single
          # node can hold none; 1 on a cluster survives losing a node.
          replicas=0,
          # dfs_query_then_fetch: index-wide BM25 statistics, so scores
          # and rankings are the same at any shard count.
          exact_scores=True,
          # A search that lost a shard (or timed out) is retried, then
          # raises ShardFailureError; it never answers a partial list.
          search_retries=3,
          retry_backoff_s=0.5,
          green_timeout_s=600.0,
          # Force-merge each shard to this many segments after the load
          # (0: no); faster searches on an index that will not change.
          force_merge_segments=0,
          # Rerunning a build that was killed resumes it (same corpus,
          # layout and streams) instead of starting over.
          resume=True,
      )
  )
  c.bulk = ml_collections.ConfigDict(
      dict(
          actions_per_request=1000,  # most documents + passages per _bulk
          # A request closes at this many bytes; none may pass
          # max_request_bytes (the cluster's http.max_content_length,
          # 100 MB by default, answers 413).
          chunk_bytes=8 << 20,
          max_request_bytes=95 << 20,
          # Parallel bulk streams (document i goes to stream i % streams);
          # a resumed build needs the same number.
          streams=2,
          # Duplicate doc_ids tolerated (logged, the first copy kept).
          max_duplicates=0,
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
