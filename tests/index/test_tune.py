"""Fusion tuning (`index.calibrate --config.mode=tune`, search/tuning.py)."""

import dataclasses
import itertools
import json
import subprocess
import sys

import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document
from search_agent.search import calibration
from search_agent.search import service
from search_agent.search import tuning
from search_agent.search.engine import EngineConfig
from tpu_configs.search import serve

START = tuning.Fusion.of(EngineConfig())
GRID = {
    'rrf_k': (1.0, 5.0, 60.0),
    'weights': {'doc': (1.0,), 'passage': (0.75,), 'title': (0.0, 0.75)},
    'depth_factor': (1, 5),
}


def test_fusion_file_round_trip_and_errors(tmp_path):
  assert START.weights == {'doc': 1.0, 'passage': 0.75, 'title': 0.75}
  assert START.view_depth_factor == {'doc': 5, 'passage': 5, 'title': 5}
  f = tuning.Fusion(
      rrf_k=2.0, weights={'doc': 1.0, 'passage': 0.5, 'title': 0.0},
      view_depth_factor={'doc': 5, 'passage': 2, 'title': 1},
  )  # fmt: skip
  f.write(tmp_path / 'f.json')
  assert tuning.Fusion.read(tmp_path / 'f.json') == f
  config = tuning.with_fusion(EngineConfig(), f)
  assert config.rrf_k == 2.0 and config.view_depth_factor['title'] == 1
  (tmp_path / 'bad.json').write_text('{"rrf_k": 1}')
  with pytest.raises(ValueError, match='not a fusion file'):
    tuning.Fusion.read(tmp_path / 'bad.json')


def test_fusion_file_bm25_round_trip_and_refusals(tmp_path):
  f = dataclasses.replace(
      START, bm25={'doc': [0.9, 0.4], 'passage': [1.2, 0.75],
                   'title': [1.2, 0.75]},
  )  # fmt: skip
  f.write(tmp_path / 'f.json')
  assert tuning.Fusion.read(tmp_path / 'f.json') == f
  c = serve.get_config()
  c.engine.fusion_file = str(tmp_path / 'f.json')
  assert service.engine_bm25(c)['doc'] == (0.9, 0.4)
  # tantivy cannot apply them: one clear error, nothing opened.
  with pytest.raises(ValueError, match='only the lucene backend applies'):
    service.open_engine(c, tmp_path)
  START.write(tmp_path / 'plain.json')  # no bm25: null in the file
  c.engine.fusion_file = str(tmp_path / 'plain.json')
  assert service.engine_bm25(c) is None
  (tmp_path / 'bad.json').write_text(
      json.dumps({**dataclasses.asdict(f), 'bm25': {'doc': [1.0]}})
  )
  with pytest.raises(ValueError, match=r'\[k1, b\] per view'):
    tuning.Fusion.read(tmp_path / 'bad.json')


def test_bm25_tuning_takes_a_view_setting_only_when_dev_gains():
  # The doc view finds each gold only under (0.9, 0.4); the other views
  # never do. At k=1 the gold wins the fusion only when the doc view ranks
  # it first, so the tuner must pick (0.9, 0.4) for doc and keep the
  # default elsewhere; with a dev split where it does not help, it keeps
  # the default.
  qids = [f'q{i}' for i in range(20)]
  qrels = {q: {f'gold-{q}': 1} for q in qids}
  cache = {q: {'doc': [f'n-{q}'], 'passage': [], 'title': []} for q in qids}
  calls = []

  def search_view(view, kb):
    calls.append((view, kb))
    helps = view == 'doc' and kb == (0.9, 0.4)
    return {
        q: [f'gold-{q}'] if helps and q != 'q19' else cache[q][view]
        for q in qids
    }

  grid = {'k1': (0.9, 1.2), 'b': (0.4, 0.75)}
  bm25, rows = tuning.tune_bm25(
      search_view, cache, qrels, qids[:15], qids[15:], START, grid, k=1,
      min_depth=1,
  )  # fmt: skip
  assert bm25 == {'doc': [0.9, 0.4], 'passage': [1.2, 0.75],
                  'title': [1.2, 0.75]}  # fmt: skip
  assert rows[0]['train'] == (0.0, 0.0) and rows[1]['train'] == (1.0, 1.0)
  assert len(calls) == len(set(calls))  # each (view, k1, b) searched once
  # Dev holds only q19, which no setting helps: the default stays.
  kept, rows = tuning.tune_bm25(
      search_view, cache, qrels, qids[:15], ['q19'], START, grid, k=1,
      min_depth=1,
  )  # fmt: skip
  assert kept == {v: [1.2, 0.75] for v in ('doc', 'passage', 'title')}
  assert rows[1]['dev'] == rows[0]['dev']


def test_splits_are_stable_and_near_their_fractions():
  groups = [f'g{i}' for i in range(3000)]
  splits = [tuning.split_of(g, (0.6, 0.2, 0.2)) for g in groups]
  assert splits == [tuning.split_of(g, (0.6, 0.2, 0.2)) for g in groups]
  share = splits.count('train') / len(splits)
  assert 0.56 < share < 0.64 and 0.16 < splits.count('test') / 3000 < 0.24
  assert splits != [tuning.split_of(g, (0.6, 0.2, 0.2), 1) for g in groups]


def test_metrics_by_hand():
  qrels = {'a': {'x': 1, 'y': 1}, 'b': {'z': 1}, 'c': {'w': 0}}
  ranked = {'a': ['x', 'q', 'y'], 'b': ['q', 'r']}
  m = tuning.metrics(qrels, ranked, ['a', 'b', 'c'], ks=(2, 3))
  # c has no gold and is left out; a finds x in 2, x and y in 3.
  assert m == {
      'topics': 2, 'recall@2': 0.25, 'all_gold@2': 0.0,
      'recall@3': 0.5, 'all_gold@3': 0.5,
  }  # fmt: skip


def test_tuning_drops_a_view_that_only_adds_noise():
  # The doc view ranks a distractor n first and the gold second, the
  # passage view the gold first, the title view n first. At k=5: with
  # title 0.75, n = 1/6 + 0.75/6 = 0.292 beats gold = 1/7 + 0.75/6 = 0.268;
  # with title 0 the gold is first. Tuning on train finds that.
  cache, qrels = {}, {}
  for i in range(40):
    gold, n = f'gold{i}', f'n{i}'
    cache[f'q{i}'] = {'doc': [n, gold], 'passage': [gold], 'title': [n]}
    qrels[f'q{i}'] = {gold: 1}
  qids = sorted(cache)
  objective = tuning._objective  # pylint: disable=protected-access
  before = objective(cache, qrels, qids, START, 1, 1)
  chosen, rows = tuning.tune(
      cache, qrels, qids[:30], qids[30:], START, GRID, k=1, min_depth=1
  )
  after = objective(cache, qrels, qids, chosen, 1, 1)
  assert after > before and after[0] == 1.0
  assert any(
      r['fusion'] == json.loads(json.dumps(START.__dict__)) for r in rows
  )


def test_topics_from_tasks_map_titles_and_skip_unknown(tmp_path):
  docs = [
      Document(doc_id='A_b', title='A b', url='u', text='t'),
      Document(doc_id='C', title='C', url='u', text='t'),
  ]
  tasks = [
      {'id': 't1', 'question': 'q1', 'answer': 'x', 'evidence': ['A b', 'C']},
      {'id': 't2', 'question': 'q2', 'answer': 'x', 'evidence': ['Nowhere']},
      {'id': 't3', 'question': 'q3', 'answer': 'x', 'evidence': ['C', 'Zz']},
  ]
  (tmp_path / 't.jsonl').write_text(
      ''.join(json.dumps(t) + '\n' for t in tasks)
  )
  topics, qrels, groups = calibration.topics_from_tasks(
      [tmp_path / 't.jsonl'], docs
  )
  assert topics == {'t1': 'q1', 't3': 'q3'}
  assert qrels == {'t1': {'A_b': 1, 'C': 1}, 't3': {'C': 1}}
  assert groups == {'t1': 'A_b|C', 't3': 'C'}


def _known_item_tasks(path) -> int:
  """Writes known-item tasks of the first 150 bundled documents; their count."""
  lines = []
  for d in itertools.islice(twowiki.read_2wiki(), 150):
    words = calibration.known_item_query(d, 8)
    if len(words) >= 4:
      task = {'id': d.doc_id, 'question': ' '.join(words), 'answer': 'x',
              'evidence': [d.title]}  # fmt: skip
      lines.append(json.dumps(task) + '\n')
  path.write_text(''.join(lines))
  return len(lines)


def _tune_binary(repo_root, workdir, *flags):
  out = subprocess.run(
      [sys.executable, '-m', 'index.calibrate',
       '--config=tpu_configs/search/calibrate.py:tiny', '--config.mode=tune',
       f'--workdir={workdir}', *flags],
      cwd=repo_root, capture_output=True, text=True, timeout=600, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  return out, json.loads((workdir / 'tune.json').read_text())


def test_served_engine_searches_the_passage_view_to_depth_k():
  c = serve.get_config()
  config = service.engine_config(c)
  assert dict(config.view_depth_factor) == {'passage': 1}
  assert (config.depth_factor, config.min_depth) == (5, 20)
  c.engine.view_depth_factor.passage = 5
  assert dict(service.engine_config(c).view_depth_factor) == {'passage': 5}


@pytest.mark.slow  # one subprocess: builds 500 documents, ~10 s idle
def test_tune_binary_writes_a_fusion_file_the_engine_loads(tmp_path, repo_root):
  n = _known_item_tasks(tmp_path / 'tasks.jsonl')
  out, report = _tune_binary(
      repo_root, tmp_path, f'--config.tune.tasks={tmp_path / "tasks.jsonl"}'
  )
  assert sum(report['splits'].values()) == n
  for when in ('before', 'after'):
    for split in ('dev', 'test'):
      m = report[when][split]
      assert {'recall@10', 'all_gold@10', 'recall@100'} <= set(m)
      assert 0.5 <= m['recall@10'] <= m['recall@100'] <= 1.0
  assert 'tantivy fixes k1=1.2' in report['bm25']
  assert 'test (' in out.stdout and 'recall@100' in out.stdout
  c = serve.get_config()
  c.engine.fusion_file = str(tmp_path / 'fusion.json')
  config = service.engine_config(c)
  chosen = tuning.Fusion.read(tmp_path / 'fusion.json')
  assert config.rrf_k == chosen.rrf_k and config.weights == chosen.weights
  assert dict(config.view_depth_factor) == chosen.view_depth_factor


@pytest.mark.slow  # one subprocess, a JVM: builds 500 documents in Lucene
def test_tune_binary_on_lucene_tunes_bm25_per_view(tmp_path, repo_root):
  # Linked-pair topics of one word from each page leave room to gain.
  _, report = _tune_binary(
      repo_root, tmp_path, '--config.backend=lucene',
      '--config.generated=linked_pair', '--config.num_topics=300',
      '--config.pair_words_each=1',
      '--config.tune.grid.bm25_k1=(0.5,1.2,3.0)',
      '--config.tune.grid.bm25_b=(0.1,0.75,1.0)',
  )  # fmt: skip
  default, tuned = report['bm25']['rows']
  assert default['bm25'] == {
      v: [1.2, 0.75] for v in ('doc', 'passage', 'title')
  }
  assert tuned['train'] >= default['train']
  # Two-word queries over 500 documents: a doc-view setting gains on train
  # and dev (0.79 -> 0.81 recall@10 on dev when written), so it is kept.
  assert tuned['dev'] > default['dev'] and tuned['bm25'] != default['bm25']
  chosen = tuning.Fusion.read(tmp_path / 'fusion.json')
  assert chosen.bm25 == tuned['bm25']
  assert report['after']['fusion']['bm25'] == tuned['bm25']
  # The file serves on the lucene backend.
  c = serve.get_config()
  c.backend, c.index_dir = 'lucene', str(tmp_path / 'index')
  c.engine.fusion_file = str(tmp_path / 'fusion.json')
  engine = service.open_engine(c, tmp_path)
  try:
    assert engine.search(['film director'], 5)
  finally:
    engine.close()
