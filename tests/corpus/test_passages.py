"""Tests for passage splitting."""

import pytest

from search_agent.corpus import passages
from search_agent.corpus.record import Document


def _doc(n_words):
  text = ' '.join(f'w{i}' for i in range(n_words))
  return Document(doc_id='d', title='t', url='https://x.org/d', text=text)


def test_short_document_is_one_passage():
  ps = passages.split_passages(_doc(5), window_words=4, stride_words=2)
  # 5 words, window 4, stride 2 -> starts 0, 2 (2 + 4 >= 5 reaches the end).
  assert [p.text for p in ps] == ['w0 w1 w2 w3', 'w2 w3 w4']
  assert [p.passage_id for p in ps] == ['d#0', 'd#1']
  assert {p.doc_id for p in ps} == {'d'}
  one = passages.split_passages(_doc(4), window_words=4, stride_words=2)
  assert [p.text for p in one] == ['w0 w1 w2 w3']


def test_every_word_is_covered_and_order_kept():
  doc = _doc(1000)
  ps = passages.split_passages(doc, window_words=128, stride_words=96)
  covered = set()
  for p in ps:
    covered.update(p.text.split())
  assert covered == set(doc.text.split())
  assert [p.ordinal for p in ps] == list(range(len(ps)))
  # starts 0, 96, ..., 960 (864 + 128 < 1000 <= 960 + 128): 11 windows.
  assert len(ps) == 11


def test_empty_text_gives_one_empty_passage():
  ps = passages.split_passages(_doc(0), window_words=8, stride_words=8)
  assert len(ps) == 1 and ps[0].text == ''


@pytest.mark.parametrize('window, stride', [(0, 1), (4, 0), (4, 5)])
def test_bad_window_or_stride(window, stride):
  with pytest.raises(ValueError):
    passages.split_passages(_doc(3), window, stride)
