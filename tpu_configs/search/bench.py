"""Search benchmark: build rate, latency and QPS (`python -m index.bench`).

Usage: python -m index.bench --config=tpu_configs/search/bench.py
--workdir=DIR (the bundled corpus and a 1M-document synthetic corpus) or
...bench.py:tiny (a 2,000-document pulse). Not a timed test: the figures
go to DIR/bench.json and stdout.
"""

import ml_collections

from tpu_configs.search import serve


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the benchmark config; arg 'tiny' shrinks everything."""
  c = ml_collections.ConfigDict()
  c.corpora = ('bundled', 'synthetic')
  # 'build' always runs (skipped when DIR/<corpus>-build.json exists);
  # drop 'latency' to only build.
  c.stages = ('build', 'latency')
  # 1M documents of ~287 words (2Wiki lengths x 4).
  c.synthetic_docs = 1_000_000
  c.synthetic_seed = 0
  # The both-views build (the index the latency stage searches); False
  # measures only the single views (then drop 'latency' too).
  c.both_views = True
  # Each view alone, streamed from the corpus (generation counted), on
  # this many docs with per_view_threads tantivy threads.
  c.single_views = ('doc', 'passage')
  c.per_view_docs = 1_000_000
  c.per_view_threads = 2
  c.queries = 2000  # timed, after the warm-up
  c.warmup = 200
  c.query_seed = 1
  c.k = 10
  c.concurrency = (1, 16)
  c.backend_threads = 2
  # The views (as tpu_configs/search/build.py).
  c.index = ml_collections.ConfigDict(
      dict(
          passage_window_words=128,
          passage_stride_words=96,
          remove_stopwords=True,
          stem=True,
      )
  )
  c.heap_mb = 256
  # The pipeline measured (serve.py's engine section; `tuned` = a fusion
  # file written by `index.calibrate --config.mode=tune`).
  c.engine = serve.get_config().engine
  # Lucene beside ours (synthetic corpus, 1 client), measured in the same
  # run: `python` is an interpreter with Pyserini and pyjnius installed
  # (e.g. `pip install pyserini pyjnius` in its own venv), `jar` the
  # Anserini fatjar Pyserini ships (pyserini/resources/jars/), `java_home`
  # a JDK 21+ (this machine: /usr/lib/jvm/temurin-25-jdk-amd64). '' = skip.
  # The embedded Lucene backend (search/lucene_backend.py) built from the
  # same documents and measured in the same run (doc view, fused, fused +
  # snippets at each concurrency); needs `bash launch/lucene_views.sh build`.
  c.lucene_backend = False
  # Searches the Lucene backend runs untimed first, for the JIT (its CPU per
  # query settles after ~5,000 at 100k documents).
  c.lucene_jit_warmup = 6000
  c.lucene = ml_collections.ConfigDict(
      dict(python='', jar='', java_home='/usr/lib/jvm/temurin-25-jdk-amd64')
  )
  # Speed targets for the Lucene backend's full pipeline (1M documents, 2
  # cores), checked in the output's `targets` (benchmark.SpeedTargets);
  # peer_reference_qps scales them to the machine they were set on
  # (docs/experiments/search-speed.md).
  c.targets = ml_collections.ConfigDict(
      dict(
          row='lucene backend: 3 views + RRF + snippets',
          p50_ms=3.0,
          qps=((1, 250.0), (16, 500.0)),
          speedup=2.5,
          baseline_row='previous: 3 views + RRF + snippets',
          doc_view_row='lucene backend: doc view',
          doc_view_vs_peer=1.0,
          peer_row='lucene (pyserini SimpleSearcher)',
          peer_reference_qps=821.0,
      )
  )
  if arg == 'tiny':
    c.synthetic_docs = 2000
    c.per_view_docs = 1000
    c.queries = 40
    c.warmup = 5
    c.concurrency = (1, 4)
    c.heap_mb = 64
    c.lucene_jit_warmup = 100
  return c
