"""Tests for index.calibrate: known-item topics, recall, TREC outputs."""

import json
import subprocess
import sys

from search_agent.corpus.record import Document
from search_agent.search import calibration
from search_agent.search import trec

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
  assert calibration.known_item_query(TEUTBERGA, 6) == [
      'died', '11', 'november', '875', 'queen', 'lotharingia'
  ]  # fmt: skip


def test_known_item_topics_are_deterministic_and_skip_short_ones():
  short = Document(doc_id='S', title='S', url='u', text='S is a town.')
  docs = [TEUTBERGA, short]
  topics, qrels = calibration.make_known_item_topics(docs, 5, min_words=4)
  assert topics == {'ki0': 'died 11 november 875 queen lotharingia marriage'
                    ' lothair ii'}  # fmt: skip
  assert qrels == {'ki0': {'Teutberga': 1}}
  again = calibration.make_known_item_topics(docs, 5, min_words=4)
  assert again == (topics, qrels)


def test_linked_pair_topics_join_two_linked_documents():
  lothair = Document(
      doc_id='Lothair_II',
      title='Lothair II',
      url='https://en.wikipedia.org/wiki/Lothair_II',
      text='Lothair II (835 - 869) was the king of Lotharingia from 855.',
  )
  a = Document(
      doc_id='Teutberga',
      title='Teutberga',
      url='u',
      text=TEUTBERGA.text,
      links=('Lothair_II', 'Not_In_Corpus'),
  )
  topics, qrels = calibration.make_linked_pair_topics(
      [a, lothair], 10, words_each=3
  )
  # Teutberga's query starts 'died 11 november'; Lothair II's (title words
  # and stopwords masked) '835 869 king'.
  assert topics == {'lp0': 'died 11 november 835 869 king'}
  assert qrels == {'lp0': {'Teutberga': 1, 'Lothair_II': 1}}
  assert (
      calibration.make_linked_pair_topics([a, lothair], 10, words_each=9)[0]
      == {}
  )  # Lothair II's query has only 5 words


def _calibrate(repo_root, workdir, *overrides):
  return subprocess.run(
      [
          sys.executable, '-m', 'index.calibrate',
          '--config=tpu_configs/search/calibrate.py:tiny',
          f'--workdir={workdir}', *overrides,
      ],
      cwd=repo_root, capture_output=True, text=True, timeout=180, check=False,
  )  # fmt: skip


def test_calibrate_binary_pulse(tmp_path, repo_root):
  out = _calibrate(repo_root, tmp_path)  # builds 500 documents, 20 topics
  assert out.returncode == 0, out.stderr[-2000:]
  summary = json.loads((tmp_path / 'recall.json').read_text())
  assert summary['num_queries'] == 20 and summary['k'] == 10
  assert summary['micro'] >= 0.9  # known items are found
  assert 'evidence recall@10: macro' in out.stdout
  run = trec.read_run(tmp_path / 'run.trec')
  assert set(run) == set(trec.read_topics(tmp_path / 'topics.tsv'))
  assert all(1 <= len(r) <= 100 for r in run.values())

  # Second step: the user's own topics and qrels over the same index.
  trec.write_topics(tmp_path / 'q.tsv', {'a': 'Lothair II', 'b': '"oops'})
  trec.write_qrels(
      tmp_path / 'qrels',
      {'a': {'Lothair_II': 1, 'Not_In_Corpus': 1}, 'c': {'Teutberga': 1}},
  )
  own = tmp_path / 'own'
  out = _calibrate(
      repo_root, own, f'--config.topics={tmp_path / "q.tsv"}',
      f'--config.qrels={tmp_path / "qrels"}',
      f'--config.index_dir={tmp_path / "index"}',
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  summary = json.loads((own / 'recall.json').read_text())
  assert 'unbalanced' in summary['rejected_queries']['b']
  assert summary['qrels_without_topic'] == ['c']
  assert summary['num_targets'] == 3 and summary['num_found'] == 1
  assert summary['macro'] == 0.25  # (1/2 for a + 0 for c) / 2
