"""Measurements behind `python -m index.bench`: build rate, latency, QPS.

Latency is wall time per call on the calling thread, including query
parsing, mapping hits to doc_ids and (for the full pipeline) fetching the
stored documents and cutting snippets. At concurrency c, c threads take
queries from one shared list; QPS is queries / wall time of the run.
"""

import concurrent.futures
import dataclasses
import pathlib
import threading
import time
from typing import Callable, Iterable, Sequence

import numpy as np
import psutil
import tantivy

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import sites
from search_agent.search import tantivy_index
from search_agent.search.backend import IndexBuildConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class LatencyStats:
  """Latency of one run.

  Attributes:
    name: What was measured.
    concurrency: Threads issuing queries.
    queries: Queries timed (after warm-up).
    p50_ms: Median latency.
    p99_ms: 99th percentile latency.
    qps: Queries per second over the run.
    cpu_ms_per_query: Process CPU time (all threads) per query: on a busy
      machine this is the load-independent cost; 2 idle cores would
      serve at most 2000 / cpu_ms_per_query queries per second.
  """

  name: str
  concurrency: int
  queries: int
  p50_ms: float
  p99_ms: float
  qps: float
  cpu_ms_per_query: float


def measure_latency(
    name: str,
    call: Callable[[str], object],
    queries: Sequence[str],
    concurrency: int,
    warmup: int = 0,
) -> LatencyStats:
  """Runs `call(query)` for every query on `concurrency` threads."""
  for q in queries[:warmup]:
    call(q)
  timed = list(queries[warmup:])
  latencies = np.zeros(len(timed))
  next_index = iter(range(len(timed)))
  lock = threading.Lock()

  def worker():
    while True:
      with lock:
        i = next(next_index, None)
      if i is None:
        return
      t = time.perf_counter()
      call(timed[i])
      latencies[i] = time.perf_counter() - t

  start, cpu = time.perf_counter(), time.process_time()
  with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
    for f in [pool.submit(worker) for _ in range(concurrency)]:
      f.result()
  wall = time.perf_counter() - start
  cpu = time.process_time() - cpu
  return LatencyStats(
      name=name,
      concurrency=concurrency,
      queries=len(timed),
      p50_ms=round(float(np.percentile(latencies, 50)) * 1000, 2),
      p99_ms=round(float(np.percentile(latencies, 99)) * 1000, 2),
      qps=round(len(timed) / wall, 1),
      cpu_ms_per_query=round(cpu / len(timed) * 1000, 2),
  )


def single_view_build_rate(
    docs: Iterable[Document],
    out_dir: pathlib.Path,
    view: str,
    config: IndexBuildConfig,
    heap_bytes: int = 256_000_000,
    threads: int = 2,
) -> dict[str, float]:
  """Builds one view alone (doc+title share the doc index); docs/s.

  The time includes document conversion and the final commit and merge,
  but not producing `docs` (pass a list to exclude generation).
  """
  schema = (
      tantivy_index.doc_schema()
      if view == 'doc'
      else tantivy_index.passage_schema()
  )
  out_dir.mkdir(parents=True, exist_ok=False)
  index = tantivy_index.register(tantivy.Index(schema, str(out_dir)), config)
  writer = index.writer(heap_bytes, threads)
  rows = n = 0
  start, cpu = time.perf_counter(), time.process_time()
  for n, doc in enumerate(docs, start=1):
    site = sites.host_suffixes(doc.url)
    if view == 'doc':
      writer.add_document(
          tantivy.Document.from_dict(
              {'doc_ord': n, 'doc_id': doc.doc_id, 'url': doc.url,
               'site': site, 'links': list(doc.links), 'title': doc.title,
               'text': doc.text},
              schema,
          )
      )  # fmt: skip
      rows += 1
      continue
    for p in split_passages(
        doc, config.passage_window_words, config.passage_stride_words
    ):
      writer.add_document(
          tantivy.Document.from_dict(
              {'doc_ord': n, 'site': site, 'text': p.text}, schema
          )
      )
      rows += 1
  writer.commit()
  writer.wait_merging_threads()
  seconds = time.perf_counter() - start
  cpu = time.process_time() - cpu
  return {
      'view': view,
      'docs': n,
      'rows': rows,
      'seconds': round(seconds, 2),
      'docs_per_s': round(n / seconds, 1),
      'cpu_seconds': round(cpu, 2),
      'docs_per_cpu_s': round(n / cpu, 1),
  }


def rss_mb() -> float:
  """Resident memory of this process, MiB (includes mapped index pages)."""
  return round(psutil.Process().memory_info().rss / 2**20, 1)


def anon_rss_mb() -> float:
  """Anonymous resident memory (heap, not the mmap'd index files), MiB."""
  with open('/proc/self/status', encoding='ascii') as f:
    for line in f:
      if line.startswith('RssAnon:'):
        return round(int(line.split()[1]) / 1024, 1)
  return float('nan')


def dir_mb(path: pathlib.Path) -> float:
  """Size of the files under `path`, MiB."""
  total = sum(f.stat().st_size for f in path.rglob('*') if f.is_file())
  return round(total / 2**20, 1)
