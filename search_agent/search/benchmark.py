"""Measurements behind `python -m index.bench`: build rate, latency, QPS.

Latency is wall time per call on the calling thread, including query
parsing, mapping hits to doc_ids and (for the full pipeline) fetching the
stored documents and cutting snippets. At concurrency c, c threads take
queries from one shared list; QPS is queries / wall time of the run.
"""

import concurrent.futures
import dataclasses
import pathlib
import resource
import threading
import time
from typing import Callable, Iterable, Sequence

import numpy as np
import psutil
import tantivy

from search_agent.corpus.record import Document
from search_agent.search import sites
from search_agent.search import snippets
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
    major_faults: Page faults of the process that read from disk during
      the timed run (an index partly out of the page cache: its latency
      and CPU include the reads).
  """

  name: str
  concurrency: int
  queries: int
  p50_ms: float
  p99_ms: float
  qps: float
  cpu_ms_per_query: float
  major_faults: int = 0


def major_faults() -> int:
  """This process's page faults that read from disk so far."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


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

  start, cpu, faults = time.perf_counter(), time.process_time(), major_faults()
  with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
    for f in [pool.submit(worker) for _ in range(concurrency)]:
      f.result()
  wall = time.perf_counter() - start
  cpu = time.process_time() - cpu
  faults = major_faults() - faults
  return LatencyStats(
      name=name,
      concurrency=concurrency,
      queries=len(timed),
      p50_ms=round(float(np.percentile(latencies, 50)) * 1000, 2),
      p99_ms=round(float(np.percentile(latencies, 99)) * 1000, 2),
      qps=round(len(timed) / wall, 1),
      cpu_ms_per_query=round(cpu / len(timed) * 1000, 2),
      major_faults=faults,
  )


def _snippet_work(engine, queries: Sequence[str], k: int) -> list[tuple]:
  """Per query (parsed query, its snippet idf, its top-k doc_ids, their
  texts), fetched before any timing."""
  work = []
  for text in queries:
    q = engine.parse(text)
    ids = [h.doc_id for h in engine.search([text], k)[0]]
    texts = [d.text for d in engine.get_documents(ids)]
    work.append((q, engine.query_idf(q), ids, texts))
  return work


def snippet_cost(
    engine,
    queries: Sequence[str],
    k: int,
    cut: Callable = snippets.make_snippet,
) -> dict[str, float]:
  """CPU-ms per query of cutting the snippets of its top `k` hits, alone.

  The hits, their documents and the snippet idf are fetched first
  (untimed). 'cold': no document cache (every document analyzed from
  scratch). 'warm': a fresh `snippets.DocumentCache` that holds them all,
  the queries cut three times and the third pass timed: the steady state
  of documents seen before (a document's whole-text sentence ends are
  found on its first reuse), as when a group of rollouts repeats a
  question's searches.

  Args:
    engine: A `SearchEngine`.
    queries: Query strings.
    k: Hits per query.
    cut: `snippets.make_snippet` or a function of the same arguments.
  """
  work = [
      (q, texts, idf) for q, idf, _, texts in _snippet_work(engine, queries, k)
  ]
  analyzer, config = engine.analyzer, engine.config.snippet

  def run(cache) -> float:
    cpu = time.process_time()
    for q, texts, idf in work:
      for t in texts:
        cut(t, q.terms, q.phrases, analyzer, idf, config, cache)
    return (time.process_time() - cpu) * 1000 / max(1, len(work))

  cold = run(None)
  warm_cache = snippets.DocumentCache(max_docs=sum(len(t) for _, t, _ in work))
  run(warm_cache)
  run(warm_cache)
  warm = run(warm_cache)
  return {
      'queries': len(work),
      'hits_per_query': round(sum(len(t) for _, t, _ in work) / len(work), 2),
      'cold_cpu_ms_per_query': round(cold, 3),
      'warm_cpu_ms_per_query': round(warm, 3),
  }


def backend_snippet_cost(engine, queries: Sequence[str], k: int) -> dict:
  """CPU-ms per query of the snippets of its top `k` hits cut by the
  engine's backend (`SnippetBackend.snippets`: the Lucene backend's Java,
  which keeps no document cache) against `snippets.make_snippet` without a
  cache, on the same hits, alone; and how many snippets the backend left
  to Python."""
  backend, analyzer = engine.backend, engine.analyzer
  work = [
      (q, idf, snippets.snippet_query(
          q.terms, q.phrases, analyzer, idf, engine.config.snippet
      ), ids, texts)
      for q, idf, ids, texts in _snippet_work(engine, queries, k)
  ]  # fmt: skip
  declined = 0
  cpu = time.process_time()
  for _, _, query, ids, _ in work:
    if query is not None:
      declined += backend.snippets(ids, query).count(None)
  java = (time.process_time() - cpu) * 1000 / max(1, len(work))
  cpu = time.process_time()
  for q, idf, _, _, texts in work:
    for t in texts:
      snippets.make_snippet(
          t, q.terms, q.phrases, analyzer, idf, engine.config.snippet, None
      )
  python = (time.process_time() - cpu) * 1000 / max(1, len(work))
  return {
      'queries': len(work),
      'backend_cpu_ms_per_query': round(java, 3),
      'python_cpu_ms_per_query': round(python, 3),
      'python_vs_backend': round(python / max(java, 1e-9), 2),
      'left_to_python': declined,
      'unsupported_queries': sum(w[2] is None for w in work),
  }


def ratios(latency: Sequence[dict]) -> dict[str, dict[str, float]]:
  """Per concurrency, QPS and p50 of the pipeline against the others.

  Keys `'<concurrency> clients'`; values `qps_vs_<name>` (pipeline QPS /
  theirs: > 1 is faster) and `p50_vs_<name>` (their p50 / pipeline p50)
  for every other name of the same concurrency.
  """
  main, out = '3 views + RRF + snippets', {}
  for n in sorted({r['concurrency'] for r in latency}):
    runs = {r['name']: r for r in latency if r['concurrency'] == n}
    if main not in runs:
      continue
    ours, row = runs[main], {}
    for name, r in runs.items():
      if name != main:
        row[f'qps_vs_{name}'] = round(ours['qps'] / max(r['qps'], 1e-9), 3)
        row[f'p50_vs_{name}'] = round(
            r['p50_ms'] / max(ours['p50_ms'], 1e-9), 3
        )
    out[f'{n} clients'] = row
  return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpeedTargets:
  """Speed targets of one pipeline row, checked in a run's figures.

  Figures move with the machine (tens of percent between runs on a shared
  2-core box), so each is also given at the reference machine's speed: a
  peer measured in the same run (one client) answered `peer_reference_qps`
  there, and a figure is scaled by that over the peer's QPS in this run
  (QPS times it, latency divided by it).

  Attributes:
    row: The pipeline row checked.
    p50_ms: Its p50 at one client, at most.
    qps: (clients, QPS at least) pairs.
    speedup: Its QPS over `baseline_row`'s at one client, at least.
    baseline_row: The row it is faster than.
    doc_view_row: A single-view row compared with the peer.
    doc_view_vs_peer: That row's QPS over the peer's at one client, at
      least.
    peer_row: The peer (one client).
    peer_reference_qps: The peer's QPS on the reference machine.
  """

  row: str
  p50_ms: float
  qps: tuple[tuple[int, float], ...]
  speedup: float
  baseline_row: str
  doc_view_row: str
  doc_view_vs_peer: float
  peer_row: str
  peer_reference_qps: float


def target_checks(latency: Sequence[dict], t: SpeedTargets) -> list[dict]:
  """Each target: its figure as measured and at the reference speed (None
  without the peer), and whether it is met; [] when `t.row` was not run.

  Ratios of two rows of the same run carry no machine speed: their
  `at_reference_speed` is the measured ratio.
  """
  runs = {(r['name'], r['concurrency']): r for r in latency}
  if (t.row, 1) not in runs:
    return []
  peer = runs.get((t.peer_row, 1))
  scale = t.peer_reference_qps / peer['qps'] if peer else None

  def check(name, measured, target, at_most=False, scaled=None):
    met = (lambda v: v <= target) if at_most else (lambda v: v >= target)
    return {
        'check': name,
        'target': f'{"<=" if at_most else ">="} {target:g}',
        'measured': round(measured, 3),
        'met': met(measured),
        'at_reference_speed': None if scaled is None else round(scaled, 3),
        'met_at_reference_speed': None if scaled is None else met(scaled),
    }

  ours = runs[(t.row, 1)]
  out = [
      check(
          'p50 ms, 1 client', ours['p50_ms'], t.p50_ms, at_most=True,
          scaled=None if scale is None else ours['p50_ms'] / scale,
      )  # fmt: skip
  ]
  for clients, qps in t.qps:
    if (t.row, clients) in runs:
      got = runs[(t.row, clients)]['qps']
      out.append(
          check(
              f'QPS, {clients} client{"s" * (clients > 1)}', got, qps,
              scaled=None if scale is None else got * scale,
          )  # fmt: skip
      )
  pairs = (
      (f'QPS over {t.baseline_row!r}, 1 client', t.row, t.baseline_row,
       t.speedup),
      (f'{t.doc_view_row!r} QPS over the peer, 1 client', t.doc_view_row,
       t.peer_row, t.doc_view_vs_peer),
  )  # fmt: skip
  for name, a, b, target in pairs:
    if (a, 1) in runs and (b, 1) in runs:
      ratio = runs[(a, 1)]['qps'] / max(runs[(b, 1)]['qps'], 1e-9)
      out.append(check(name, ratio, target, scaled=ratio))
  return out


def single_view_build_rate(
    docs: Iterable[Document],
    out_dir: pathlib.Path,
    view: str,
    config: IndexBuildConfig,
    heap_bytes: int = 256_000_000,
    threads: int = 2,
) -> dict[str, float]:
  """Builds one view alone (doc+title share the doc index); docs/s.

  The time includes producing `docs` when it is a generator (pass a list
  to leave generation out), document conversion, and the final commit and
  merge. Figures as `rate_figures`.
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
  clocks = start_clocks()
  for n, doc in enumerate(docs, start=1):
    site = sites.host_suffixes(doc.url)
    if view == 'doc':
      writer.add_document(tantivy_index.doc_row(doc, n, site, schema))
      rows += 1
      continue
    for row in tantivy_index.passage_rows(doc, n, site, config, schema):
      writer.add_document(row)
      rows += 1
  writer.commit()
  writer.wait_merging_threads()
  return {'view': view, 'docs': n, 'rows': rows, **rate_figures(n, clocks)}


def start_clocks() -> tuple[float, float, float]:
  """Wall, process CPU and calling-thread CPU time, for `rate_figures`."""
  return time.perf_counter(), time.process_time(), time.thread_time()


def rate_figures(n: int, clocks: tuple[float, float, float]) -> dict:
  """Build rate of n documents since `clocks = start_clocks()`.

  `cpu_seconds` counts every thread (tantivy indexes on its own threads);
  `main_thread_cpu_seconds` is the Python side alone, which cannot run in
  parallel with itself. On a shared machine wall time depends on the
  load, so `docs_per_s_2_idle_cores` = n / max(main thread CPU, all CPU /
  2) is the rate the same work would reach on 2 idle cores, if the
  indexing threads keep both busy.
  """
  wall = time.perf_counter() - clocks[0]
  cpu = time.process_time() - clocks[1]
  main = time.thread_time() - clocks[2]
  return {
      'seconds': round(wall, 2),
      'docs_per_s': round(n / wall, 1),
      'cpu_seconds': round(cpu, 2),
      'main_thread_cpu_seconds': round(main, 2),
      'docs_per_cpu_s': round(n / cpu, 1),
      'docs_per_s_2_idle_cores': round(n / max(main, cpu / 2), 1),
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
