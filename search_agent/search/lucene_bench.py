r"""Lucene BM25 top-k latency, the Pyserini reference (a standalone script).

  PYTHON lucene_bench.py --index=IDX --queries=Q.txt --jar=FATJAR \
      [--k=10] [--warmup=200]

Runs under a Python that has pyjnius (e.g. the venv Pyserini is installed
in) and imports nothing of search_agent: `index.bench` runs it as a
subprocess when `lucene.python` is set. It searches with Anserini's
`SimpleSearcher`, the Java class Pyserini's `LuceneSearcher` wraps (BM25
k1=0.9, b=0.4 by Anserini's default; Lucene's English analyzer: Porter
stemming, stopwords), one query at a time on one thread, and prints one
JSON line with the figures `benchmark.LatencyStats` has. `index` builds
the index with Anserini's `IndexCollection` from a JsonCollection dir.
"""

import argparse
import json
import resource
import subprocess
import sys
import time


def build(java: str, jar: str, docs_dir: str, index: str, threads: int):
  """Indexes a JsonCollection directory; returns seconds taken."""
  start = time.perf_counter()
  subprocess.run(
      [
          java, '-cp', jar, 'io.anserini.index.IndexCollection',
          '-collection', 'JsonCollection', '-input', docs_dir,
          '-index', index, '-generator', 'DefaultLuceneDocumentGenerator',
          '-threads', str(threads),
      ],
      check=True, capture_output=True,
  )  # fmt: skip
  return time.perf_counter() - start


def search(index: str, queries: list[str], jar: str, k: int, warmup: int):
  import jnius_config  # pylint: disable=import-outside-toplevel

  jnius_config.set_classpath(jar)
  from jnius import autoclass  # pylint: disable=import-outside-toplevel

  searcher = autoclass('io.anserini.search.SimpleSearcher')(index)
  for q in queries[:warmup]:
    searcher.search(q, k)
  timed = queries[warmup:]
  latencies = []
  faults = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
  wall, cpu = time.perf_counter(), time.process_time()
  for q in timed:
    t = time.perf_counter()
    searcher.search(q, k)
    latencies.append(time.perf_counter() - t)
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  faults = resource.getrusage(resource.RUSAGE_SELF).ru_majflt - faults
  latencies.sort()
  return {
      'name': 'lucene (pyserini SimpleSearcher)',
      'concurrency': 1,
      'queries': len(timed),
      'p50_ms': round(latencies[len(latencies) // 2] * 1000, 2),
      'p99_ms': round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
      'qps': round(len(timed) / wall, 1),
      'cpu_ms_per_query': round(cpu / len(timed) * 1000, 2),
      'major_faults': faults,
  }


def main():
  p = argparse.ArgumentParser()
  p.add_argument('--index', required=True)
  p.add_argument('--queries', required=True)
  p.add_argument('--jar', required=True)
  p.add_argument('--k', type=int, default=10)
  p.add_argument('--warmup', type=int, default=200)
  p.add_argument('--build_from', default='', help='JsonCollection dir')
  p.add_argument('--java', default='java')
  p.add_argument('--threads', type=int, default=2)
  a = p.parse_args()
  out = {}
  if a.build_from:
    out['build_seconds'] = round(
        build(a.java, a.jar, a.build_from, a.index, a.threads), 2
    )
  with open(a.queries, encoding='utf-8') as f:
    queries = f.read().splitlines()
  out['latency'] = search(a.index, queries, a.jar, a.k, a.warmup)
  print(json.dumps(out), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
