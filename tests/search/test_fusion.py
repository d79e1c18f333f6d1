"""Hand-worked tests for weighted RRF (open-recipe.md, k=5, 1.0/0.75/0.75)."""

import pytest

from search_agent.search import fusion

W = fusion.DEFAULT_WEIGHTS


def test_seed_formula_by_hand():
  rankings = {
      'doc': ['a', 'b', 'c'],
      'passage': ['b', 'a'],
      'title': ['c'],
  }
  got = dict(fusion.weighted_rrf(rankings, W, k=5))
  # a: 1.0/(5+1) + 0.75/(5+2)            = 0.1666667 + 0.1071429 = 0.2738095
  # b: 1.0/(5+2) + 0.75/(5+1)            = 0.1428571 + 0.125     = 0.2678571
  # c: 1.0/(5+3) + 0.75/(5+1)            = 0.125     + 0.125     = 0.25
  assert got['a'] == pytest.approx(1 / 6 + 0.75 / 7)
  assert got['b'] == pytest.approx(1 / 7 + 0.75 / 6)
  assert got['c'] == pytest.approx(1 / 8 + 0.75 / 6)
  assert [d for d, _ in fusion.weighted_rrf(rankings, W)] == ['a', 'b', 'c']


def test_absent_document_contributes_zero():
  got = fusion.weighted_rrf({'doc': ['x'], 'title': [], 'passage': []}, W)
  assert got == [('x', pytest.approx(1 / 6))]


def test_ties_broken_by_best_rank_then_doc_id():
  # p: doc rank 1 (1/6) + nothing          = 1/6
  # q: title rank 1 with weight 1.0 (1/6)  = 1/6, same best rank -> doc_id
  weights = {'doc': 1.0, 'title': 1.0}
  got = fusion.weighted_rrf({'doc': ['q'], 'title': ['p']}, weights)
  assert [d for d, _ in got] == ['p', 'q']
  # Equal scores, different best rank: z = 0.5/(5+1) = 1/12 at rank 1,
  # a = 1.0/(5+7) = 1/12 at rank 7 -> z first, although 'a' < 'z'.
  filler = [f'y{i}' for i in range(6)]
  got = fusion.weighted_rrf(
      {'v1': ['z'], 'v2': filler + ['a']}, {'v1': 0.5, 'v2': 1.0}
  )
  scores = dict(got)
  assert scores['z'] == scores['a']
  order = [d for d, _ in got]
  assert order.index('z') < order.index('a')


def test_duplicate_in_one_list_counts_once_at_best_rank():
  got = dict(fusion.weighted_rrf({'doc': ['a', 'b', 'a']}, {'doc': 1.0}))
  assert got['a'] == pytest.approx(1 / 6)
  assert got['b'] == pytest.approx(1 / 7)


def test_ranks_are_counted_after_duplicates_are_removed():
  # Passage hits a1, a2 (parent a), b1 (parent b) map to [a, a, b]; with
  # duplicates removed, preserving order, b is rank 2, not 3:
  # a: 0.75/(5+1) = 0.125, b: 0.75/(5+2) = 0.1071429.
  got = dict(fusion.weighted_rrf({'passage': ['a', 'a', 'b']}, W))
  assert got['a'] == pytest.approx(0.75 / 6)
  assert got['b'] == pytest.approx(0.75 / 7)


def test_k_and_weights_are_parameters():
  got = dict(fusion.weighted_rrf({'doc': ['a']}, {'doc': 2.0}, k=60))
  assert got['a'] == pytest.approx(2 / 61)


@pytest.mark.parametrize(
    'rankings, weights, k, message',
    [
        ({'doc': ['a']}, {}, 5, 'no fusion weight'),
        ({'doc': ['a']}, {'doc': -1.0}, 5, 'negative'),
        ({'doc': ['a']}, {'doc': 1.0}, -1, 'must be > -1'),
    ],
)
def test_bad_arguments(rankings, weights, k, message):
  with pytest.raises(ValueError, match=message):
    fusion.weighted_rrf(rankings, weights, k)
