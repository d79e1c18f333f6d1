"""Hand-worked tests for query-focused snippets and best windows."""

import math
import random
import re
import sys

import pytest

from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer

A = QueryAnalyzer(stem=True, remove_stopwords=True)
SMALL = snippets.SnippetConfig(window_words=10, max_words=8)
# Sentences (word spans): [0,3) [3,7) [7,9) [9,15) [15,17).
TEXT = (
    'Alpha beta gamma. The zebra runs fast. Delta epsilon. Zebra stripes'
    ' are black and white. Omega end.'
)


def test_whole_sentences_around_the_best_match():
  # Local idf over 5 sentences: zebra df=2 -> ln(1 + 3.5/2.5) = 0.875;
  # stripe df=1 -> ln(1 + 4.5/1.5) = 1.386. The sentence holding both wins
  # and grows forward by "Omega end." (6 + 2 = 8 words <= 8).
  got = snippets.make_snippet(TEXT, ['zebra', 'stripes'], [], A, config=SMALL)
  assert got == 'Zebra stripes are black and white. Omega end.'


def test_tie_prefers_run_starting_at_its_match():
  # "gamma" only in sentence 0: runs from sentence 0 grow to [0, 7).
  got = snippets.make_snippet(TEXT, ['gamma'], [], A, config=SMALL)
  assert got == 'Alpha beta gamma. The zebra runs fast.'


def test_quoted_phrase_window_ranks_first():
  text = (
      'Fast zebra zebra zebra herds. Nothing here at all now. Some say'
      ' zebra runs are rare.'
  )
  idf = lambda terms: {'zebra': 1.0, 'run': 0.1}
  # BM25 (fixed length): sentence 1: 3 * 2.2 / 4.2 = 1.571; sentence 3:
  # 1.0 + 0.1 = 1.1. Without quotes sentence 1 wins, with them sentence 3.
  plain = snippets.make_snippet(text, ['zebra', 'runs'], [], A, idf, SMALL)
  assert plain.startswith('Fast zebra zebra zebra herds.')
  quoted = snippets.make_snippet(text, [], ['zebra runs'], A, idf, SMALL)
  assert quoted == 'Some say zebra runs are rare.'


def test_phrase_across_a_sentence_end_is_kept_over_whole_sentences():
  # "poet. He" (words 5-6) spans sentences [0,6) and [6,13): together 13
  # words, over the 8-word budget, so no run of whole sentences holds the
  # phrase. Best 10-word window: [0,10) (ties [3,13), earliest wins); best
  # 8-word span in it holding the phrase: [0,8) (ties [2,10), earliest).
  text = 'Salem wrote verse and was poet. He was born in Bembla in 1824.'
  got = snippets.make_snippet(text, [], ['poet He'], A, config=SMALL)
  assert got == 'Salem wrote verse and was poet. He was'
  # Without the phrase (keywords only), whole sentences win.
  got = snippets.make_snippet(text, ['poet'], [], A, config=SMALL)
  assert got == 'Salem wrote verse and was poet.'


def test_long_sentence_is_cut_to_budget_around_match():
  text = 'one two three four five six seven eight nine ten eleven twelve'
  got = snippets.make_snippet(text, ['eleven'], [], A, config=SMALL)
  assert got.split() == text.split()[3:11]
  assert len(got.split()) <= SMALL.max_words


def test_no_match_gives_lead_and_empty_text():
  assert (
      snippets.make_snippet(TEXT, ['nothing'], [], A, config=SMALL)
      == 'Alpha beta gamma. The zebra runs fast.'
  )
  assert snippets.make_snippet('', ['x'], [], A) == ''


def test_default_budget_is_48_words_and_contiguous():
  words = [f'w{i}.' if i % 10 == 9 else f'w{i}' for i in range(300)]
  words[150] = 'target'
  text = ' '.join(words)
  got = snippets.make_snippet(text, ['target'], [], A)
  assert 'target' in got and len(got.split()) <= 48
  assert got in text  # contiguous
  # Sentences are 10 words: the run is 4 whole sentences (40 words).
  assert len(got.split()) == 40 and got.endswith('.')


def test_corpus_idf_is_used():
  calls = []

  def idf(terms):
    calls.append(list(terms))
    return {'zebra': 0.1, 'stripe': 0.1, 'gamma': 5.0}

  got = snippets.make_snippet(TEXT, ['gamma', 'zebra'], [], A, idf, SMALL)
  assert calls == [['gamma', 'zebra']]
  assert got.startswith('Alpha beta gamma.')


def test_best_windows_for_a_goal():
  text = ' '.join(['filler'] * 100 + ['zebra stripes'] + ['filler'] * 100)
  text += ' the zebra again'
  wins = snippets.best_windows(text, 'zebra stripes', A, top_n=3)
  assert [w.start for w in wins][0] <= 100 < wins[0].end
  assert wins[0].score[1] > wins[1].score[1] > 0
  assert all(
      a.end <= b.start or b.end <= a.start
      for i, a in enumerate(wins)
      for b in wins[i + 1 :]
  )
  assert snippets.best_windows(text, 'unrelated words', A) == []


def test_window_bm25_by_hand():
  # One 64-word window, tf(zebra)=2, corpus idf 2.0, full-length window:
  # 2.0 * 2 * 2.2 / (2 + 1.2) = 2.75
  text = ' '.join(['zebra', 'zebra'] + ['x'] * 62)
  wins = snippets.best_windows(text, 'zebra', A, idf=lambda t: {'zebra': 2.0})
  assert wins[0].score == (0, pytest.approx(2.0 * 2 * 2.2 / 3.2))
  assert math.isclose(2.0 * 2 * 2.2 / 3.2, 2.75)


def test_line_breaks_end_sentences_and_vanish_from_output():
  text = 'Heading without period\nThe zebra line here.\n\nOther text follows'
  got = snippets.make_snippet(
      text, ['zebra'], [], A, config=snippets.SnippetConfig(max_words=4)
  )
  assert got == 'The zebra line here.'
  got = snippets.make_snippet(
      text, ['heading'], [], A, config=snippets.SnippetConfig(max_words=7)
  )
  assert got == 'Heading without period The zebra line here.'


@pytest.mark.parametrize(
    'text',
    [
        'He took a B.A. in 1869 before training as a lawyer.',
        'Count Odo (c. 854-895) ruled the march in 1869.',
        'The poem (lit. "the lawyer") is famous.',
        'Papers by J. R. Smith were lost in 1869.',
        'As Dr. Watson said, he earned a Ph.D. at St. Andrews.',
    ],
)
def test_abbreviations_and_initials_do_not_end_sentences(text):
  doc = snippets._Text(text)  # the segmenter itself
  assert doc.sentence_ends == [len(text.split()) - 1], doc.sentence_ends


def test_real_sentence_ends_still_split():
  text = 'Alpha beta gamma. Then came Dr. No in 1962. It was a film.'
  assert snippets._Text(text).sentence_ends == [2, 8, 12]
  got = snippets.make_snippet(text, ['1962'], [], A, config=SMALL)
  assert got == 'Then came Dr. No in 1962.'


def test_document_cache_is_bounded_lru_and_keyed_by_content():
  cache = snippets.DocumentCache(max_docs=2)
  a, b, c = 'Alpha one.', 'Beta two.', 'Gamma three.'
  first = cache.get(a)
  assert cache.get(a) is first and first.reused
  cache.get(b)
  cache.get(a)  # a is now the most recent: c evicts b
  cache.get(c)
  assert len(cache) == 2
  assert cache.get(a) is first
  assert not cache.get(b).reused  # b was evicted: made again
  assert (cache.hits, cache.misses) == (3, 4)
  # A changed text is another entry: never the stale one.
  changed = cache.get(a.replace('one', 'uno'))
  assert changed is not first and changed.words == ['Alpha', 'uno.']
  off = snippets.DocumentCache(max_docs=0)
  assert off.get(a) is not off.get(a) and len(off) == 0
  short = snippets.DocumentCache(max_chars=len(b))
  assert short.get(c) is not short.get(c) and len(short) == 0  # too long
  assert short.get(b) is short.get(b)


def test_cache_does_not_change_snippets():
  cache = snippets.DocumentCache(max_docs=4)
  for _ in range(3):  # miss, then hits (whole-text sentence ends)
    for terms in (['zebra', 'stripes'], ['gamma'], ['nothing']):
      got = snippets.make_snippet(TEXT, terms, [], A, config=SMALL, cache=cache)
      assert got == snippets.make_snippet(
          TEXT, terms, [], A, config=SMALL, cache=None
      )
  assert cache.hits == 8 and cache.misses == 1


def test_edited_document_gets_a_fresh_snippet():
  cache = snippets.DocumentCache()
  text = 'The zebra runs fast. Nothing else here.'
  assert snippets.make_snippet(text, ['zebra'], [], A, cache=cache) == text
  edited = text.replace('zebra', 'horse')
  got = snippets.make_snippet(edited, ['zebra'], [], A, cache=cache)
  assert got == edited  # the lead: no match in the new text


def test_line_end_marks_equal_the_regex():
  rng = random.Random(0)
  pieces = [
      'a',
      'Bc.',
      ' ',
      '  ',
      '\t',
      '\n',
      '\n\n',
      ' \n',
      '\r\n',
      'é',
      '\u00a0',
  ]
  for _ in range(3000):
    text = ''.join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
    # pylint: disable-next=protected-access
    want = snippets._LINE_END_RE.sub('\\1' + snippets._LINE_END + ' ', text)
    # pylint: disable-next=protected-access
    assert snippets._mark_line_ends(text).split() == want.split(), repr(text)


def test_lowercase_copy_matches_like_re_ignorecase_over_all_unicode():
  # The lowercase path (snippets._EXTRA_CASES) relies on: where str.lower()
  # maps a character to one character (not Σ), that is the lowercase re.I
  # compares, letters/digits stay letters/digits, and re.I's other matches
  # of a lowercase pattern character are its listed extra equivalents.
  chars = [
      chr(i) for i in range(sys.maxunicode + 1)
      if not 0xD800 <= i < 0xE000 and len(chr(i).lower()) == 1
  ]  # fmt: skip
  assert all(c.isalnum() == c.lower().isalnum() for c in chars)
  text = ''.join(c for c in chars if c != '\u03a3')
  lower = text.lower()
  assert len(lower) == len(text)
  for p in 'abikst0éßøαισςкв':
    # pylint: disable-next=protected-access
    extra = snippets._EXTRA_CASES.get(p, ())
    want = {c for c, l in zip(text, lower) if l == p or l in extra}
    assert set(re.findall(re.escape(p), text, re.I)) == want, p
