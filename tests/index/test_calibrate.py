"""Tests for index.calibrate: known-item topics, recall, TREC outputs."""

import json

from index import calibrate
from search_agent.corpus.record import Document
from search_agent.search import trec
from tpu_configs.search import calibrate as calibrate_config

TEUTBERGA = Document(
    doc_id='Teutberga',
    title='Teutberga',
    url='https://en.wikipedia.org/wiki/Teutberga',
    text=(
        'Teutberga( died 11 November 875) was a queen of Lotharingia by'
        ' marriage to Lothair II. She was a daughter of Bosonid Boso.'
    ),
)


def test_known_item_query_masks_title_and_stopwords():
  # First sentence tokens: teutberga died 11 november 875 was a queen of
  # lotharingia by marriage to lothair ii; minus the title word and the
  # stopwords (was, a, of, by, to) -> 10 words, cut to 6.
  assert calibrate.known_item_query(TEUTBERGA, 6) == [
      'died', '11', 'november', '875', 'queen', 'lotharingia'
  ]  # fmt: skip


def test_known_item_topics_are_deterministic_and_skip_short_ones():
  short = Document(doc_id='S', title='S', url='u', text='S is a town.')
  docs = [TEUTBERGA, short]
  topics, qrels = calibrate.make_known_item_topics(docs, 5, min_words=4)
  assert topics == {'ki0': 'died 11 november 875 queen lotharingia marriage'
                    ' lothair ii'}  # fmt: skip
  assert qrels == {'ki0': {'Teutberga': 1}}
  again = calibrate.make_known_item_topics(docs, 5, min_words=4)
  assert again == (topics, qrels)


def test_calibrate_pulse_writes_run_and_recall(tmp_path):
  c = calibrate_config.get_config('tiny')
  summary = calibrate.calibrate(c, tmp_path)  # builds 500 documents
  assert summary['num_queries'] == 20 and summary['k'] == 10
  assert summary['micro'] >= 0.9  # known items are found
  run = trec.read_run(tmp_path / 'run.trec')
  assert set(run) == set(trec.read_topics(tmp_path / 'topics.tsv'))
  assert all(len(r) <= c.run_depth for r in run.values())
  assert json.loads((tmp_path / 'recall.json').read_text()) == summary

  # Second step: the user's own topics and qrels over the same index.
  trec.write_topics(tmp_path / 'q.tsv', {'a': 'Lothair II', 'b': '"oops'})
  trec.write_qrels(
      tmp_path / 'qrels',
      {'a': {'Lothair_II': 1, 'Not_In_Corpus': 1}, 'c': {'Teutberga': 1}},
  )
  own = calibrate_config.get_config('tiny')
  own.topics, own.qrels = str(tmp_path / 'q.tsv'), str(tmp_path / 'qrels')
  own.index_dir = str(tmp_path / 'index')  # reuse the index built above
  summary = calibrate.calibrate(own, tmp_path / 'own')
  assert 'unbalanced' in summary['rejected_queries']['b']
  assert summary['qrels_without_topic'] == ['c']
  assert summary['num_targets'] == 3 and summary['num_found'] == 1
  assert summary['macro'] == 0.25  # (1/2 + 0) / 2
