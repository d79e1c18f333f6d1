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
  # No Pyserini here: the targets as measured only.
  checks = {c['check']: c for c in result['targets']}
  absolute = ('p50 ms, 1 client', 'QPS, 1 client')
  assert [checks[c]['at_reference_speed'] for c in absolute] == [None] * 2


def test_measure_latency_counts_every_query():
  seen = []
  stats = benchmark.measure_latency('x', seen.append, list('abcdef'), 3, 2)
  assert sorted(seen) == list('abcdef')  # 2 warm-up + 4 timed
  assert stats.queries == 4 and stats.concurrency == 3
  assert stats.p99_ms >= stats.p50_ms >= 0


def _targets(**over):
  t = dict(
      row='ours', p50_ms=3.0, qps=((1, 250.0), (16, 500.0)), speedup=2.5,
      baseline_row='before', doc_view_row='doc', doc_view_vs_peer=1.0,
      peer_row='peer', peer_reference_qps=800.0,
  )  # fmt: skip
  return benchmark.SpeedTargets(**{**t, **over})


def _row(name, clients, qps, p50_ms=1.0):
  return {'name': name, 'concurrency': clients, 'qps': qps, 'p50_ms': p50_ms}


def test_target_checks_scale_by_the_peer_measured_in_the_same_run():
  latency = [
      _row('ours', 1, 300.0, p50_ms=3.2), _row('ours', 16, 450.0),
      _row('before', 1, 100.0), _row('doc', 1, 390.0), _row('peer', 1, 400.0),
  ]  # fmt: skip
  got = {c['check']: c for c in benchmark.target_checks(latency, _targets())}
  # This run's machine is half the reference's speed (peer 400 vs 800 QPS).
  p50 = got['p50 ms, 1 client']
  assert (p50['measured'], p50['met']) == (3.2, False)
  assert (p50['at_reference_speed'], p50['met_at_reference_speed']) == (
      1.6, True,
  )  # fmt: skip
  q16 = got['QPS, 16 clients']
  assert (q16['target'], q16['measured'], q16['met']) == ('>= 500', 450, False)
  assert (q16['at_reference_speed'], q16['met_at_reference_speed']) == (
      900.0, True,
  )  # fmt: skip
  assert got['QPS, 1 client']['met'] is True
  # Ratios of two rows of one run do not scale.
  speedup = got["QPS over 'before', 1 client"]
  assert speedup['measured'] == speedup['at_reference_speed'] == 3.0
  doc = got["'doc' QPS over the peer, 1 client"]
  assert (doc['measured'], doc['met']) == (0.975, False)


def test_target_checks_without_the_peer_or_the_row():
  latency = [_row('ours', 1, 300.0), _row('before', 1, 100.0)]
  checks = benchmark.target_checks(latency, _targets())
  assert [c['check'] for c in checks] == [
      'p50 ms, 1 client', 'QPS, 1 client', "QPS over 'before', 1 client",
  ]  # fmt: skip
  assert all(c['at_reference_speed'] is None for c in checks[:2])
  assert benchmark.target_checks(latency, _targets(row='other')) == []


def test_measure_latency_counts_the_timed_runs_disk_reads(monkeypatch):
  """major_faults: the process's page faults that read from disk during the
  timed queries, not the warm-up's."""
  reads = {'n': 0}

  def search(q):
    reads['n'] += 100 if q == 'warm' else 3  # pages each query read

  monkeypatch.setattr(benchmark, 'major_faults', lambda: reads['n'])
  stats = benchmark.measure_latency('x', search, ['warm', 'a', 'b', 'c'], 2, 1)
  assert stats.major_faults == 9
