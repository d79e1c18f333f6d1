"""Tests for the deterministic synthetic benchmark corpus."""

import hashlib
import statistics

import numpy as np
import pytest

from search_agent.corpus import synthetic


@pytest.fixture(scope='module')
def vocab():
  return synthetic.Vocabulary()


def test_deterministic_and_prefix_stable(vocab):
  spec = synthetic.SyntheticSpec(num_docs=1200, seed=3)
  a = list(synthetic.iter_documents(spec, vocab))
  b = list(synthetic.iter_documents(spec, vocab))
  short = synthetic.SyntheticSpec(num_docs=5, seed=3)
  assert a == b
  assert list(synthetic.iter_documents(short, vocab)) == a[:5]
  other = synthetic.SyntheticSpec(num_docs=5, seed=4)
  assert list(synthetic.iter_documents(other, vocab)) != a[:5]


def test_shape_follows_2wiki(vocab):
  docs = list(
      synthetic.iter_documents(synthetic.SyntheticSpec(num_docs=2000), vocab)
  )
  assert [d.doc_id for d in docs[:2]] == ['syn-0', 'syn-1']
  mean_words = statistics.mean(len(d.text.split()) for d in docs)
  assert 250 < mean_words < 320  # 2Wiki's ~71 words x 4
  assert all(2 <= len(d.title.split()) <= 5 for d in docs)
  assert docs[0].text.split()[19].endswith('.')
  assert vocab.words[0] == 'the'  # Zipf head of the 2Wiki vocabulary


def test_queries(vocab):
  qs = synthetic.sample_queries(100, seed=1, vocab=vocab)
  assert qs == synthetic.sample_queries(100, seed=1, vocab=vocab)
  assert all(2 <= len(q.split()) <= 6 for q in qs)


def test_bucketed_sampling_equals_binary_search(vocab):
  rng = np.random.default_rng(7)
  u = np.random.default_rng(7).random(200_000)
  want = np.minimum(
      np.searchsorted(vocab.cdf, u, side='right'), len(vocab.words) - 1
  )
  np.testing.assert_array_equal(vocab.sample_indices(rng, 200_000), want)


def test_corpus_is_pinned(vocab):
  """The corpus of the figures in ANCHORS.md: a faster generator must not
  change it (digest taken before the generator was vectorized)."""
  sha = hashlib.sha256()
  spec = synthetic.SyntheticSpec(num_docs=2500, seed=3)
  for doc in synthetic.iter_documents(spec, vocab):
    sha.update(repr(doc).encode())
  assert sha.hexdigest()[:16] == 'fa80231009c1d9ca'
