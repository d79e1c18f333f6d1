"""The HTTP search service: `python -m index.serve`.

Usage: --config=tpu_configs/search/serve.py --workdir=DIR serves the tantivy
index in config.index_dir (default DIR/index, as index.build writes it);
...serve.py:tiny builds the first 500 bundled 2Wiki documents into
DIR/index when no index is there and serves them (tests, a quick look).
--config.backend=opensearch serves indices built on a cluster instead
(sections as tpu_configs/search/opensearch.py).
"""

import ml_collections

from search_agent.search import guard
from tpu_configs.search import opensearch


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the serve config; arg 'tiny' builds a small index if missing."""
  c = ml_collections.ConfigDict()
  # 'tantivy' (embedded), 'lucene' (embedded through the JVM; built by
  # index.build --config.backend=lucene, jar: launch/lucene_views.sh build)
  # or 'opensearch'.
  c.backend = 'tantivy'
  c.index_dir = ''  # '' = <workdir>/index
  c.backend_threads = 2  # tantivy threads per batch of queries
  # Build the index from `corpus` when index_dir holds none (tiny only:
  # a real index is built once with index.build, not at serve time).
  c.build_if_missing = False
  c.corpus = ml_collections.ConfigDict(
      dict(kind='2wiki', path='', max_docs=0, derive_links=True)
  )
  c.build = ml_collections.ConfigDict(
      dict(
          passage_window_words=128,
          passage_stride_words=96,
          remove_stopwords=True,
          stem=True,
      )
  )
  c.host = '127.0.0.1'
  c.port = 8080
  c.log_level = 'warning'
  # Fusion and snippets (engine.EngineConfig; seed: RRF k=5, weights 1.0
  # doc, 0.75 passage, 0.75 title; 64-word windows, 48-word snippets).
  c.engine = ml_collections.ConfigDict(
      dict(
          rrf_k=5.0,
          weights=ml_collections.ConfigDict(
              dict(doc=1.0, passage=0.75, title=0.75)
          ),
          depth_factor=5,
          # Per view, overriding depth_factor: the passage view to depth k
          # (at least min_depth). It is the costliest view (3.2M passages
          # at 1M documents); recall@10 on the tiny synthesis tasks holds
          # (docs/experiments/search-speed.md).
          view_depth_factor=ml_collections.ConfigDict(dict(passage=1)),
          min_depth=20,
          max_k=100,
          max_query_chars=1024,
          snippet_window_words=64,
          snippet_max_words=48,
          # A fusion file written by `index.calibrate --config.mode=tune`
          # (rrf_k, weights, per-view depth factors; replaces those above).
          fusion_file='',
      )
  )
  # Leakage guard (Iris): results from these host/path prefixes are dropped.
  # Defaults: guard.DEFAULT_BLOCKED (Hub dataset/Space pages, their API
  # paths, the dataset viewer's server).
  c.blocked_patterns = guard.DEFAULT_BLOCKED
  # Request limits (service.ServiceLimits).
  c.limits = ml_collections.ConfigDict(
      dict(
          max_body_bytes=1 << 20,
          max_queries=64,
          max_k=100,
          max_doc_ids=100,
          max_json_depth=32,  # [/{ nesting, checked before parsing
          threads=16,  # engine calls in flight at once
      )
  )
  # backend='opensearch': the cluster and indices of
  # tpu_configs/search/opensearch.py (as index.build uses them).
  cluster = opensearch.get_config('tiny' if arg == 'tiny' else None)
  c.opensearch = ml_collections.ConfigDict(
      dict(cluster=cluster.cluster, index=cluster.index, bulk=cluster.bulk)
  )
  if arg == 'tiny':
    c.build_if_missing = True
    c.corpus.max_docs = 500
    c.build.passage_window_words = 64
    c.build.passage_stride_words = 48
    c.limits.threads = 4
  elif arg:
    raise ValueError(f"unknown variant {arg!r}; use '' or 'tiny'")
  return c
