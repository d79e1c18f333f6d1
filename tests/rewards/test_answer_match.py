"""Exact-match normalization, shared by rewards and eval."""

from search_agent.rewards import answer_match


def test_normalize_hand_worked():
  assert answer_match.normalize_answer('  The Beatles! ') == 'beatles'
  assert answer_match.normalize_answer('12,000') == '12000'
  assert answer_match.normalize_answer('Zürich') == 'zurich'
  assert (
      answer_match.normalize_answer('St. Paul’s  Church') == 'st paul’s church'
  )
  assert answer_match.normalize_answer('a cat, an apple') == 'cat apple'


def test_exact_match_answer_and_aliases():
  assert answer_match.exact_match('12000', '12,000')
  assert answer_match.exact_match('beatles', 'The Beatles')
  assert answer_match.exact_match('Fab Four', 'The Beatles', ['the fab four'])
  assert not answer_match.exact_match('Rolling Stones', 'The Beatles')
  assert not answer_match.exact_match(None, 'x')
  assert not answer_match.exact_match('the', 'The')  # empty after normalizing


def test_exact_match_on_real_answers(shared_data):
  import json

  path = shared_data / 'qa' / 'webshaper.500.jsonl'
  rows = [json.loads(l) for l in path.read_text().splitlines()[:50]]
  for row in rows:
    assert answer_match.exact_match(row['answer'].upper(), row['answer'])
    assert answer_match.exact_match(f' {row["answer"]}. ', row['answer'])
