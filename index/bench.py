r"""Benchmarks the embedded search stack (not a timed test).

  python -m index.bench --config=tpu_configs/search/bench.py --workdir=DIR

For the bundled 2Wiki corpus and a deterministic synthetic corpus: build
rate (both views in one pass, and each view alone), index size, RSS, and
top-k latency p50/p99 and QPS at each concurrency for raw tantivy (the doc
view's term query, no doc_id mapping), the doc view alone, the fused three
views, the full pipeline with snippets, and the same pipeline with the views
searched one after another (the previous implementation), with the ratios
between them measured in the same run. With `lucene_backend` the embedded
Lucene backend (`search/lucene_backend.py`) is built from the same documents
and measured beside them: its doc view alone, its fused three views (views
and RRF in Java, one bridge call) and its full pipeline with snippets; its
speed targets are checked (`targets`: as measured and at the speed of the
machine they were set on, scaled by Pyserini's QPS in the same run). The
snippets of k hits are also timed alone (`benchmark.snippet_cost`: CPU per
query without and with the document cache). A corpus
already built in DIR (DIR/<corpus>-build.json) is reused, so
`--config.stages=build` then a second run measures on the same index.
"""

import itertools
import json
import os
import pathlib
import subprocess
import time

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags
import tantivy

from search_agent.corpus import synthetic
from search_agent.corpus import twowiki
from search_agent.search import benchmark
from search_agent.search import lucene_index
from search_agent.search import tantivy_index
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.service import engine_config
from search_agent.search.tantivy_backend import tantivy_engine

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'tpu_configs/search/bench.py', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Scratch and output dir.')
flags.mark_flags_as_required(['config', 'workdir'])


def _corpus(name, c, vocab):
  if name == 'bundled':
    return lambda: iter(twowiki.read_2wiki())
  spec = synthetic.SyntheticSpec(
      num_docs=c.synthetic_docs, seed=c.synthetic_seed
  )
  return lambda: synthetic.iter_documents(spec, vocab)


def _build(docs, index_dir, open_writer) -> dict:
  """Both views in one pass into `open_writer()`; the time includes opening
  it, producing the documents (and, for Lucene, the JVM start, batches and
  the final merge)."""
  clocks = benchmark.start_clocks()
  with open_writer() as w:
    for i, doc in enumerate(docs, start=1):
      w.add(doc)
      if i % 100_000 == 0:
        logging.info('%d docs in %.0f s', i, time.perf_counter() - clocks[0])
  return {
      'counts': w.counts,
      **benchmark.rate_figures(w.counts['doc'], clocks),
      'index_mb': benchmark.dir_mb(index_dir),
  }


def _raw_tantivy(backend, k):
  """Top-k of the doc view's term query, straight through tantivy-py."""
  # pylint: disable-next=protected-access
  schema, searcher = backend._doc_schema, backend._doc_searcher

  def call(q):
    terms = backend.analyzer.terms(q)
    if terms:
      query = tantivy.Query.boolean_query(
          [
              (
                  tantivy.Occur.Should,
                  tantivy.Query.term_query(schema, 'text', t),
              )
              for t in terms
          ]
      )
      searcher.search(query, limit=k, count=False)

  return call


def _latency(engine, previous, lucene, lucene_py, queries, c) -> list[dict]:
  backend, k = engine.backend, c.k
  calls = {
      'raw tantivy': _raw_tantivy(backend, k),
      'doc view': lambda q: backend.rank_view(engine.parse(q), 'doc', k),
      '3 views + RRF': lambda q: engine.fused_rankings([engine.parse(q)], k),
      '3 views + RRF + snippets': lambda q: engine.search([q], k),
      'previous: 3 views + RRF + snippets': lambda q: previous.search([q], k),
  }  # fmt: skip
  if lucene is not None:
    lb = lucene.backend
    # The JVM compiles its hot paths over the first few thousand queries:
    # warm them before any timing (tantivy needs no such warm-up).
    for q in itertools.islice(itertools.cycle(queries), c.lucene_jit_warmup):
      lucene.search([q], k)
    calls.update({
        'lucene backend: doc view':
            lambda q: lb.rank_view(lucene.parse(q), 'doc', k),
        'lucene backend: 3 views + RRF':
            lambda q: lucene.fused_rankings([lucene.parse(q)], k),
        'lucene backend: 3 views + RRF + snippets':
            lambda q: lucene.search([q], k),
        'lucene backend: 3 views + RRF + Python snippets':
            lambda q: lucene_py.search([q], k),
    })  # fmt: skip
  return [
      benchmark.measure_latency(name, call, queries, n, c.warmup).__dict__
      for n in c.concurrency
      for name, call in calls.items()
  ]


def _build_stage(name, c, workdir, vocab) -> dict:
  """Builds (or, when already built, reloads the figures of) one corpus."""
  saved = workdir / f'{name}-build.json'
  if saved.exists():
    return json.loads(saved.read_text())
  make_docs, config = _corpus(name, c, vocab), IndexBuildConfig(**c.index)
  out = {}
  if c.both_views:
    path = workdir / name
    out['build'] = _build(
        make_docs(), path,
        lambda: tantivy_index.IndexWriter(path, config, c.heap_mb * 10**6),
    )  # fmt: skip
  out['build_single_view'] = [
      benchmark.single_view_build_rate(
          itertools.islice(make_docs(), c.per_view_docs),
          workdir / f'{name}-{v}-only', v, config,
          c.heap_mb * 10**6, c.per_view_threads,
      )
      for v in c.single_views
  ]  # fmt: skip
  out['rss_mb_after_build'] = benchmark.rss_mb()
  saved.write_text(json.dumps(out, indent=1) + '\n')
  return out


def _lucene_build_stage(name, c, workdir, vocab) -> dict:
  """Builds (or reloads the figures of) one corpus's Lucene views."""
  saved = workdir / f'{name}-lucene-views-build.json'
  if saved.exists():
    return json.loads(saved.read_text())
  path = workdir / f'{name}-lucene-views'
  out = _build(
      _corpus(name, c, vocab)(), path,
      lambda: lucene_index.LuceneIndexWriter(
          path, IndexBuildConfig(**c.index), c.heap_mb
      ),
  )  # fmt: skip
  saved.write_text(json.dumps(out, indent=1) + '\n')
  return out


def _lucene(name, c, workdir, vocab, queries) -> dict:
  """Lucene (Pyserini's searcher) on the same documents and queries.

  Runs `search_agent/search/lucene_bench.py` under `c.lucene.python`; the
  index (the document text, as the doc view) is built once per workdir.
  """
  lc, ldir = c.lucene, workdir / f'{name}-lucene'
  built = ldir / 'built.json'
  cmd = [
      lc.python, str(pathlib.Path(__file__).parents[1] / 'search_agent'
                     / 'search' / 'lucene_bench.py'),
      f'--index={ldir / "index"}', f'--queries={ldir / "queries.txt"}',
      f'--jar={lc.jar}', f'--k={c.k}', f'--warmup={c.warmup}',
  ]  # fmt: skip
  if not built.exists():
    (ldir / 'docs').mkdir(parents=True, exist_ok=True)
    with open(ldir / 'docs' / 'docs.jsonl', 'w', encoding='utf-8') as f:
      for doc in _corpus(name, c, vocab)():
        f.write(json.dumps({'id': doc.doc_id, 'contents': doc.text}) + '\n')
    cmd += [
        f'--build_from={ldir / "docs"}', f'--threads={c.per_view_threads}',
        f'--java={pathlib.Path(lc.java_home) / "bin" / "java"}',
    ]  # fmt: skip
  (ldir / 'queries.txt').write_text('\n'.join(queries) + '\n')
  env = {**os.environ, 'JAVA_HOME': lc.java_home}
  out = subprocess.run(
      cmd, env=env, capture_output=True, text=True, check=False, timeout=3600
  )
  if out.returncode != 0:
    raise RuntimeError(f'lucene_bench failed: {out.stderr[-2000:]}')
  result = json.loads(out.stdout.strip().splitlines()[-1])
  if 'build_seconds' in result:
    n = sum(1 for _ in open(ldir / 'docs' / 'docs.jsonl', encoding='utf-8'))
    result['docs_per_s'] = round(n / result['build_seconds'], 1)
    built.write_text(json.dumps(result) + '\n')
  else:
    result = {**json.loads(built.read_text()), 'latency': result['latency']}
  return result


def run_corpus(name, c, workdir, vocab) -> dict:
  out = {'corpus': name, **_build_stage(name, c, workdir, vocab)}
  if c.lucene_backend:
    out['build_lucene_backend'] = _lucene_build_stage(name, c, workdir, vocab)
  if 'latency' in c.stages:
    engine = tantivy_engine(
        workdir / name, engine_config(c), threads=c.backend_threads
    )
    previous = tantivy_engine(
        workdir / name, threads=c.backend_threads, parallel_views=False
    )
    lucene, lucene_py = (
        [
            lucene_engine(
                workdir / f'{name}-lucene-views', engine_config(c),
                threads=c.backend_threads, java_snippets=java,
            )
            for java in (True, False)
        ]
        if c.lucene_backend
        else (None, None)
    )  # fmt: skip
    out['rss_mb_engine_open'] = benchmark.rss_mb()
    out['anon_rss_mb_engine_open'] = benchmark.anon_rss_mb()
    queries = synthetic.sample_queries(
        c.queries + c.warmup, c.query_seed, vocab
    )
    out['latency'] = _latency(engine, previous, lucene, lucene_py, queries, c)
    # The snippets of k hits alone (CPU), without and with the document cache.
    out['snippets'] = benchmark.snippet_cost(engine, queries, c.k)
    if lucene is not None:  # the same, cut in Java and in Python
      out['lucene_snippets'] = benchmark.backend_snippet_cost(
          lucene, queries, c.k
      )
    if c.lucene.python and name == 'synthetic':
      out['lucene'] = _lucene(name, c, workdir, vocab, queries)
      out['latency'].append(out['lucene']['latency'])
    out['ratios'] = benchmark.ratios(out['latency'])
    out['targets'] = benchmark.target_checks(
        out['latency'], benchmark.SpeedTargets(**c.targets.to_dict())
    )
    out['rss_mb_end'] = benchmark.rss_mb()
    out['anon_rss_mb_end'] = benchmark.anon_rss_mb()
    engine.close()
    previous.close()
    if lucene is not None:
      lucene.close()
      lucene_py.close()
  print(json.dumps(out, indent=1), flush=True)
  return out


def main(argv):
  del argv
  c, workdir = _CONFIG.value, pathlib.Path(_WORKDIR.value)
  if 'latency' in c.stages and not c.both_views:
    raise ValueError(
        'the latency stage searches the both-views index: set'
        " --config.both_views=True or --config.stages=('build',)"
    )
  workdir.mkdir(parents=True, exist_ok=True)
  vocab = synthetic.Vocabulary()
  results = [run_corpus(n, c, workdir, vocab) for n in c.corpora]
  if 'latency' in c.stages:
    path = workdir / 'bench.json'
    path.write_text(json.dumps(results, indent=1) + '\n')


if __name__ == '__main__':
  app.run(main)
