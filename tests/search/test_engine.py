"""Tests for the fused search pipeline over real tantivy indexes."""

import concurrent.futures
import dataclasses

import pytest

from search_agent.corpus.record import Document
from search_agent.search import backend
from search_agent.search import engine as engine_lib
from search_agent.search import fusion
from search_agent.search import tantivy_index
from search_agent.search.parser import parse_query
from search_agent.search.parser import QueryError
from search_agent.search.tantivy_backend import tantivy_engine


def test_hits_are_fused_views_with_snippets(wiki_engine):
  (hits,) = wiki_engine.search(['wife of Lothair II'], 5)
  assert len(hits) == 5
  assert hits[0].doc_id == 'Lothair_II'
  assert hits[0].url == 'https://en.wikipedia.org/wiki/Lothair_II'
  assert 'Teutberga' in hits[0].snippet
  assert all(len(h.snippet.split()) <= 48 for h in hits)
  assert [h.score for h in hits] == sorted(
      (h.score for h in hits), reverse=True
  )
  # The scores are exactly weighted RRF over the backend's view rankings.
  q = parse_query('wife of Lothair II')
  (rankings,) = wiki_engine.backend.view_rankings([q], 25)
  fused = fusion.weighted_rrf(rankings, fusion.DEFAULT_WEIGHTS, 5)
  assert [(h.doc_id, h.score) for h in hits] == [
      (d, pytest.approx(s)) for d, s in fused[:5]
  ]


def test_phrase_and_site_reach_every_result(wiki_engine):
  (hits,) = wiki_engine.search(['"Bishop of Elmham"'], 10)
  assert [h.doc_id for h in hits] == ['Theodred_II_(Bishop_of_Elmham)']
  assert wiki_engine.search(['Lothair site:example.org'], 10) == [[]]


def test_batch_order_and_per_query_errors(wiki_engine):
  texts = ['Lothair II', 'Mark Pellington documentary', 'Teutberga']
  batch = wiki_engine.search(texts, 3)
  assert [b[0].doc_id for b in batch] == [
      wiki_engine.search([t], 3)[0][0].doc_id for t in texts
  ]
  with pytest.raises(QueryError, match='unbalanced'):
    wiki_engine.search(['fine', 'bad "quote'], 3)
  mixed = wiki_engine.search_or_errors(
      ['Teutberga', 'a site:x.org site:y.org'], 2
  )
  assert mixed[0][0].doc_id == 'Teutberga'
  assert isinstance(mixed[1], QueryError)
  with pytest.raises(ValueError, match='k must be'):
    wiki_engine.search(['x'], 0)
  assert wiki_engine.search([], 3) == []
  with pytest.raises(TypeError, match='list of query strings'):
    wiki_engine.search('Teutberga', 3)


def test_reranker_hook(wiki_engine):
  e = engine_lib.SearchEngine(
      wiki_engine.backend,
      wiki_engine.config,
      analyzer=wiki_engine.analyzer,
      reranker=lambda q, hits: list(reversed(hits)),
  )
  plain = [h.doc_id for h in wiki_engine.search(['Lothair'], 4)[0]]
  assert [h.doc_id for h in e.search(['Lothair'], 4)[0]] == plain[::-1]


def test_guard_removes_blocked_results_and_backfills(tmp_path):
  docs = [
      Document(
          doc_id=f'd{i}',
          title=f'Leak {i}',
          url=(
              f'https://huggingface.co/datasets/x/{i}'
              if i < 3
              else f'https://ok.org/{i}'
          ),
          text=f'benchmark answers page {i}',
      )
      for i in range(6)
  ]
  with tantivy_index.IndexWriter(
      tmp_path / 'i', backend.IndexBuildConfig()
  ) as w:
    w.add_all(docs)
  e = tantivy_engine(tmp_path / 'i')
  (hits,) = e.search(['benchmark answers'], 3)
  assert sorted(h.doc_id for h in hits) == ['d3', 'd4', 'd5']
  e.close()


def test_config_is_frozen():
  with pytest.raises(dataclasses.FrozenInstanceError):
    engine_lib.EngineConfig().rrf_k = 60  # type: ignore[misc]


def test_concurrent_searches_match_sequential(wiki_engine):
  texts = [f'{w} film director' for w in ('German', 'American', 'French')] * 4
  expected = [wiki_engine.search([t], 5) for t in texts]
  with concurrent.futures.ThreadPoolExecutor(8) as pool:
    got = list(pool.map(lambda t: wiki_engine.search([t], 5), texts))
  assert got == expected
  assert wiki_engine.search(texts, 5) == [e[0] for e in expected]


def test_inconsistent_backend_is_an_error(wiki_engine):
  class ForgetfulBackend:
    """The real backend, except that it cannot return stored documents."""

    def __getattr__(self, name):
      return getattr(wiki_engine.backend, name)

    def get_documents(self, doc_ids):
      return [None] * len(doc_ids)

  e = engine_lib.SearchEngine(ForgetfulBackend(), analyzer=wiki_engine.analyzer)
  with pytest.raises(backend.BackendError, match='inconsistent'):
    e.search(['Lothair'], 3)
