"""Tests for TREC IO and evidence recall@k."""

import pytest

from search_agent.search import trec


def test_reads_the_browsecomp_plus_evidence_qrels(shared_data):
  path = shared_data / 'benchmarks' / 'browsecomp-plus-qrel_evidence.txt'
  qrels = trec.read_qrels(path)
  assert len(qrels) == 830
  assert sum(len(v) for v in qrels.values()) == 5064
  assert qrels['769']['18639'] == 1


def test_hand_worked_recall():
  # q1: relevant {a, b, c}; top-2 of the run is [a, x] -> 1/3.
  # q2: relevant {d}; run has d at rank 1 -> 1.
  # q3: relevant {e, f}; no run entries -> 0.
  # q4: only a non-relevant judgment -> not counted.
  qrels = {
      'q1': {'a': 1, 'b': 2, 'c': 1},
      'q2': {'d': 1},
      'q3': {'e': 1, 'f': 1},
      'q4': {'g': 0},
  }
  run = {'q1': [('a', 3.0), ('x', 2.0), ('b', 1.0)], 'q2': [('d', 1.0)]}
  report = trec.evidence_recall(qrels, run, k=2)
  assert report.num_queries == 3
  assert report.num_targets == 6
  assert report.num_found == 2
  assert report.macro == pytest.approx((1 / 3 + 1 + 0) / 3)
  assert report.micro == pytest.approx(2 / 6)
  assert report.per_query == pytest.approx({'q1': 1 / 3, 'q2': 1.0, 'q3': 0})
  assert trec.evidence_recall(qrels, run, k=3).per_query['q1'] == (
      pytest.approx(2 / 3)
  )


def test_run_qrels_and_topics_round_trip(tmp_path):
  run = {'1': [('d1', 0.5), ('d2', 0.25)], '2': [('d3', 1.0)]}
  trec.write_run(tmp_path / 'run.trec', run, tag='bm25rrf')
  lines = (tmp_path / 'run.trec').read_text().splitlines()
  assert lines[0] == '1 Q0 d1 1 0.500000 bm25rrf'
  assert trec.read_run(tmp_path / 'run.trec') == run
  trec.write_qrels(tmp_path / 'q.txt', {'1': {'d1': 1}})
  assert trec.read_qrels(tmp_path / 'q.txt') == {'1': {'d1': 1}}
  trec.write_topics(tmp_path / 't.tsv', {'1': 'who  directed\nX'})
  assert trec.read_topics(tmp_path / 't.tsv') == {'1': 'who directed X'}


def test_malformed_lines_name_file_and_line(tmp_path):
  path = tmp_path / 'bad.txt'
  path.write_text('1 0 d1 1\n1 0 d2\n')
  with pytest.raises(trec.TrecFormatError, match='bad.txt:2'):
    trec.read_qrels(path)
  with pytest.raises(trec.TrecFormatError, match='whitespace'):
    trec.write_run(tmp_path / 'r', {'1': [('a b', 1.0)]})
  with pytest.raises(ValueError, match='k must be'):
    trec.evidence_recall({}, {}, k=0)
