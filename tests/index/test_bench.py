"""Pulse test of `python -m index.bench` (tiny sizes; figures not checked)."""

import json
import subprocess
import sys

import pytest

from search_agent.search import benchmark


@pytest.mark.slow  # two subprocess runs: ~5 s idle, ~20 s on a busy box
def test_bench_binary_pulse(tmp_path, repo_root):
  cmd = [
      sys.executable, '-m', 'index.bench',
      '--config=tpu_configs/search/bench.py:tiny',
      f'--workdir={tmp_path}',
      "--config.corpora=('synthetic',)",
      '--config.synthetic_docs=300',
      '--config.per_view_docs=100',
      '--config.queries=6',
      '--config.warmup=2',
  ]  # fmt: skip
  for _ in range(2):  # the second run reuses the built index
    out = subprocess.run(
        cmd, cwd=repo_root, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
  (result,) = json.loads((tmp_path / 'bench.json').read_text())
  assert result['build']['counts']['doc'] == 300
  assert [r['view'] for r in result['build_single_view']] == ['doc', 'passage']
  names = {(r['name'], r['concurrency']) for r in result['latency']}
  assert ('3 views + RRF + snippets', 4) in names
  assert all(r['queries'] == 6 and r['qps'] > 0 for r in result['latency'])
  assert result['snippets']['queries'] == 8  # warm-up ones too
  assert result['snippets']['cold_cpu_ms_per_query'] > 0


def test_bench_lucene_backend_pulse(tmp_path, repo_root):
  cmd = [
      sys.executable, '-m', 'index.bench',
      '--config=tpu_configs/search/bench.py:tiny',
      f'--workdir={tmp_path}',
      "--config.corpora=('synthetic',)",
      '--config.synthetic_docs=300',
      '--config.per_view_docs=100',
      '--config.queries=6',
      '--config.warmup=2',
      '--config.lucene_backend=True',
      '--config.lucene_jit_warmup=10',
  ]  # fmt: skip
  out = subprocess.run(
      cmd, cwd=repo_root, capture_output=True, text=True, timeout=180,
      check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  (result,) = json.loads((tmp_path / 'bench.json').read_text())
  assert result['build_lucene_backend']['counts']['doc'] == 300
  names = {r['name'] for r in result['latency']}
  assert 'lucene backend: 3 views + RRF + snippets' in names
  assert 'lucene backend: 3 views + RRF + Python snippets' in names
  cost = result['lucene_snippets']
  assert cost['queries'] == 8 and cost['unsupported_queries'] == 0
  assert cost['backend_cpu_ms_per_query'] > 0
  assert cost['python_cpu_ms_per_query'] > 0


def test_measure_latency_counts_every_query():
  seen = []
  stats = benchmark.measure_latency('x', seen.append, list('abcdef'), 3, 2)
  assert sorted(seen) == list('abcdef')  # 2 warm-up + 4 timed
  assert stats.queries == 4 and stats.concurrency == 3
  assert stats.p99_ms >= stats.p50_ms >= 0
