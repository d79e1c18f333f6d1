"""Tests for the request bodies shared by the Elasticsearch/OpenSearch clients.

Pure: no cluster. The bodies' behaviour on a real node is in
test_es_backend.py.
"""

import pytest

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import es_bodies
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.parser import parse_query

NAMES = es_bodies.index_names('t')


def test_analyzer_mirrors_the_tantivy_pipeline():
  settings = es_bodies.analysis_settings(IndexBuildConfig())
  analyzer = settings['analyzer'][es_bodies.ANALYZER]
  assert analyzer['filter'] == ['en_long', 'lowercase', 'en_stop', 'en_stem']
  assert settings['filter']['en_stop']['stopwords'] == list(
      analysis.ENGLISH_STOPWORDS
  )
  assert settings['filter']['en_stem']['language'] == 'porter2'
  # tantivy drops tokens of >= 40 bytes; `length` keeps max inclusive.
  assert settings['filter']['en_long']['max'] == 39


def test_analyzer_without_stopwords_or_stemming():
  settings = es_bodies.analysis_settings(
      IndexBuildConfig(remove_stopwords=False, stem=False)
  )
  assert settings['analyzer'][es_bodies.ANALYZER]['filter'] == [
      'en_long',
      'lowercase',
  ]
  assert set(settings['filter']) == {'en_long'}


def test_index_bodies_record_the_build_config():
  build = IndexBuildConfig(passage_window_words=64, passage_stride_words=32)
  doc = es_bodies.create_index_body('doc', build, shards=2, replicas=0)
  assert doc['mappings']['_meta']['build']['passage_window_words'] == 64
  assert doc['settings']['index']['number_of_shards'] == 2
  assert doc['mappings']['properties']['text']['analyzer'] == 'en_search'
  passage = es_bodies.create_index_body('passage', build, shards=1, replicas=0)
  assert passage['mappings']['_source'] == {'excludes': ['text']}
  with pytest.raises(ValueError, match="'doc' or 'passage'"):
    es_bodies.create_index_body('title', build, shards=1, replicas=0)


def test_bulk_actions_carry_site_suffixes_and_parent_ids():
  doc = Document(
      doc_id='d1',
      title='T',
      url='https://en.m.wikipedia.org/wiki/T',
      text=' '.join(f'w{i}' for i in range(10)),
  )
  passages = split_passages(doc, window_words=4, stride_words=3)
  actions = list(es_bodies.bulk_actions(doc, passages, NAMES, ordinal=7))
  assert actions[0][0] == {'index': {'_index': 't-doc', '_id': 'd1'}}
  # Ties break in corpus order: every row carries the document's ordinal.
  assert {s['ord'] for _, s in actions} == {7}
  assert actions[0][1]['site'] == [
      'en.m.wikipedia.org',
      'm.wikipedia.org',
      'wikipedia.org',
      'org',
  ]
  assert [a['index']['_id'] for a, _ in actions[1:]] == [
      'd1#0',
      'd1#1',
      'd1#2',
  ]
  assert {s['doc_id'] for _, s in actions[1:]} == {'d1'}
  assert es_bodies.document_from_source(actions[0][1]) == doc


def test_search_body_scores_words_and_phrases_and_filters_site():
  q = parse_query('director "Dark Knight" site:wikipedia.org')
  body = es_bodies.view_search_body(q, 'title', 7)
  assert body['size'] == 7
  query = body['query']['bool']
  assert query['should'] == [
      {'match': {'title': {'query': 'director dark knight'}}}
  ]
  assert query['minimum_should_match'] == 1
  assert query['must'] == [
      {
          'match_phrase': {
              'title': {'query': 'Dark Knight', 'zero_terms_query': 'all'}
          }
      }
  ]
  assert query['filter'] == [{'term': {'site': 'wikipedia.org'}}]
  assert 'collapse' not in body
  # Equal scores break by doc_id, whatever the shard layout.
  assert body['sort'] == [
      {'_score': 'desc'},
      {'ord': {'order': 'asc', 'unmapped_type': 'long'}},
      {'doc_id': 'asc'},
  ]
  assert body['track_scores'] is True


def test_passage_body_collapses_on_parent():
  body = es_bodies.view_search_body(parse_query('x'), 'passage', 3)
  assert body['collapse'] == {'field': 'doc_id'}
  assert body['query']['bool']['filter'] == []
  hit = {'_id': 'd9#2', 'fields': {'doc_id': ['d9']}}
  assert es_bodies.hit_doc_id(hit, 'passage') == 'd9'
  assert es_bodies.hit_doc_id({'_id': 'd9'}, 'doc') == 'd9'


def test_msearch_is_query_major_in_view_order():
  qs = [parse_query('a'), parse_query('b')]
  lines = es_bodies.msearch_body(qs, 5, NAMES)
  assert len(lines) == 2 * 2 * len(VIEWS)
  headers = [line['index'] for line in lines[0::2]]
  assert headers == ['t-doc', 't-passage', 't-doc'] * 2
  for header in lines[0::2]:
    assert header['search_type'] == 'dfs_query_then_fetch'
    assert header['allow_partial_search_results'] is False
  inexact = es_bodies.msearch_body(qs, 5, NAMES, exact=False)
  assert 'search_type' not in inexact[0]
  assert inexact[0]['allow_partial_search_results'] is False
  fields = [
      next(iter(b['query']['bool']['should'][0]['match'])) for b in lines[1::2]
  ]
  assert fields == ['text', 'text', 'title'] * 2
