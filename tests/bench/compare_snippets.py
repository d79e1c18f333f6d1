"""Snippet CPU per query, the pre-cache code vs the current one, same run.

Run: PYTHONPATH=. .venv/bin/python tests/bench/compare_snippets.py INDEX_DIR
  [NUM_QUERIES [REPEATS]]

INDEX_DIR: a tantivy index (`index.build`, or `index.bench --config.stages=
"('build',)"` for DIR/synthetic). The old `snippets.py` is read from commit
bcaddc5 (the last before the document cache and single-pass scoring) with
`git show`. Queries: `synthetic.sample_queries` (as index.bench); 10 hits
each; `benchmark.snippet_cost` times both, alternating, REPEATS times.
"""

import importlib.util
import pathlib
import statistics
import subprocess
import sys
import tempfile

from search_agent.corpus import synthetic
from search_agent.search import benchmark
from search_agent.search.tantivy_backend import tantivy_engine

OLD = 'bcaddc5:search_agent/search/snippets.py'


def _old_module():
  src = subprocess.run(
      ['git', 'show', OLD], capture_output=True, text=True, check=True
  ).stdout
  path = pathlib.Path(tempfile.mkdtemp()) / 'snippets_old.py'
  path.write_text(src)
  spec = importlib.util.spec_from_file_location('snippets_old', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def main(index, num_queries=1000, repeats=3):
  old = _old_module()

  def old_cut(text, terms, phrases, analyzer, idf, config, cache):
    del cache
    return old.make_snippet(text, terms, phrases, analyzer, idf, config)

  engine = tantivy_engine(index)
  queries = synthetic.sample_queries(num_queries, 1, synthetic.Vocabulary())
  runs = {'old': [], 'new cold': [], 'new warm': []}
  for _ in range(repeats):
    runs['old'].append(
        benchmark.snippet_cost(engine, queries, 10, old_cut)[
            'cold_cpu_ms_per_query'
        ]
    )
    new = benchmark.snippet_cost(engine, queries, 10)
    runs['new cold'].append(new['cold_cpu_ms_per_query'])
    runs['new warm'].append(new['warm_cpu_ms_per_query'])
  print(f'{index}: {num_queries} queries, {new["hits_per_query"]} hits each')
  med = {k: statistics.median(v) for k, v in runs.items()}
  for k, v in runs.items():
    print(f'  {k:9s} CPU-ms/query median {med[k]:.3f} (runs {v})')
  print(
      f'  old / new cold {med["old"] / med["new cold"]:.2f}x,'
      f' old / new warm {med["old"] / med["new warm"]:.2f}x'
  )
  engine.close()


if __name__ == '__main__':
  main(sys.argv[1], *map(int, sys.argv[2:]))
