"""The fast paths give the same answers as the plain ones they replace.

Region-limited sentence segmentation in snippets vs the whole text;
concurrent views vs views one after another; per-view depth cuts.
"""

import random

import pytest

from search_agent.corpus import twowiki
from search_agent.search import benchmark
from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.analysis import raw_tokens
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.parser import parse_query
from search_agent.search.tantivy_backend import TantivyBackend

A = QueryAnalyzer(stem=True, remove_stopwords=True)


def _whole_text_sentences(doc, w_lo, w_hi, budget):
  del w_lo, w_hi, budget
  # pylint: disable-next=protected-access
  return snippets._sentences(doc, 0, len(doc.words))


def test_region_segmentation_matches_whole_text(monkeypatch):
  docs = list(twowiki.read_2wiki())[:400]
  rng = random.Random(0)
  cases = []
  for d in docs:
    # The document, and a long one (8 documents, one with sentence ends
    # removed so that some sentences exceed the budget).
    long = ' '.join(x.text for x in rng.sample(docs, 8))
    for text in (d.text, long, long.replace('. ', ' ', 12)):
      toks = raw_tokens(text) or ['x']
      terms = rng.sample(toks, min(len(toks), rng.randint(1, 4)))
      i = rng.randrange(max(1, len(toks) - 2))
      phrases = [' '.join(toks[i : i + 2])] if rng.random() < 0.3 else []
      cases.append((text, terms + ['zebra'], phrases))
  idf = lambda ts: {t: 1.0 + len(t) % 3 for t in ts}
  fast = [snippets.make_snippet(t, q, p, A, idf) for t, q, p in cases]
  monkeypatch.setattr(snippets, '_region_sentences', _whole_text_sentences)
  plain = [snippets.make_snippet(t, q, p, A, idf) for t, q, p in cases]
  assert fast == plain
  assert len(set(fast)) > len(cases) // 2  # the cases are varied


@pytest.fixture(scope='module')
def backends(wiki_index):
  par = TantivyBackend(wiki_index, parallel_views=True)
  seq = TantivyBackend(wiki_index, parallel_views=False)
  yield par, seq
  par.close()
  seq.close()


def test_parallel_views_match_sequential(backends):
  par, seq = backends
  queries = [
      'director of the film', '"New York" born', 'river site:wikipedia.org',
      'the', 'Lisbon', 'who married the actress',
  ]  # fmt: skip
  for q in queries:
    parsed = [parse_query(q)]
    assert par.view_rankings(parsed, 30) == seq.view_rankings(parsed, 30)


def test_per_view_depth_cuts_each_view_before_fusion(backends):
  par, _ = backends
  q = parse_query('american film director born')
  deep = SearchEngine(par, EngineConfig(view_depth_factor={'title': 1}))
  assert deep.view_depths(10) == {'doc': 50, 'passage': 50, 'title': 20}
  (fused,) = deep.fused_rankings([q], 10)
  (views,) = par.view_rankings([q], 50)
  cut = {v: ids[: deep.view_depths(10)[v]] for v, ids in views.items()}
  assert {d for d, _ in fused} == {d for ids in cut.values() for d in ids}


def test_snippet_cost_cuts_each_hit_cold_then_three_times_warm(wiki_engine):
  calls = []

  def cut(text, terms, phrases, analyzer, idf, config, cache):
    calls.append((text, cache))
    return snippets.make_snippet(
        text, terms, phrases, analyzer, idf, config, cache=cache
    )

  queries = ['director of the film', '"New York" born', 'Lisbon']
  got = benchmark.snippet_cost(wiki_engine, queries, 5, cut)
  hits = sum(len(r) for r in wiki_engine.search(queries, 5))
  assert len(calls) == 4 * hits and got['hits_per_query'] == hits / 3
  assert [c for _, c in calls[:hits]] == [None] * hits
  warm = {id(c) for _, c in calls[hits:]}
  assert len(warm) == 1 and calls[-1][1].hits >= 2 * hits  # passes 2, 3
  assert got['cold_cpu_ms_per_query'] > 0 and got['warm_cpu_ms_per_query'] > 0
