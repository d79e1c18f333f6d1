"""Pattern claims read from real bundled 2Wiki paragraphs."""

import pytest

from search_agent.synthesis import consistency
from search_agent.synthesis import entities
from search_agent.synthesis import patterns
from search_agent.synthesis.schema import PageClaim


@pytest.fixture(scope='module')
def extractor(prepared):
  docs = list(prepared.docs.values())
  return patterns.Extractor(prepared.docs, entities.title_index(docs))


def _triples(extractor, doc):
  return {(c.relation, c.object, c.object_doc) for c in extractor.extract(doc)}


def test_life_dates_and_places(extractor, by_title):
  got = _triples(extractor, by_title['Ertem Eğilmez'])
  assert ('date_of_birth', '18 February 1929', None) in got
  assert ('place_of_birth', 'Trabzon', None) in got
  assert ('date_of_death', '21 September 1989', None) in got
  assert ('place_of_death', 'Istanbul, Turkey', None) in got
  assert ('nationality', 'Turkish', None) in got
  got = _triples(extractor, by_title['Frank Tuttle'])
  assert ('date_of_birth', 'August 6, 1892', None) in got
  assert ('date_of_death', 'January 6, 1963', None) in got


def test_no_date_from_a_glued_parenthesis(extractor, by_title):
  # "(16 October 185430 November 1900)": the separator is missing, so no
  # life date may be read from it (a naive search would give the death
  # date as the birth date).
  rels = {c.relation for c in extractor.extract(by_title['Oscar Wilde'])}
  assert 'date_of_birth' not in rels and 'date_of_death' not in rels


def test_film_credits_resolve_to_pages(extractor, by_title):
  got = _triples(extractor, by_title['The Tender Years'])
  assert ('release_year', '1948', None) in got
  assert ('director', 'Harold D. Schuster', 'Harold_D._Schuster') in got
  writers = {o for r, o, _ in got if r == 'screenwriter'}
  assert writers == {'Arnold Belgard', 'Abem Finkel', 'Jack Jungmeyer'}


def test_parent_through_honorific(extractor, by_title):
  got = _triples(extractor, by_title['Princess Yolanda of Savoy'])
  assert (
      'father',
      'King Victor Emmanuel III of Italy',
      'Victor_Emmanuel_III_of_Italy',
  ) in got


def test_film_year_in_parenthesis_is_not_a_birth(extractor, by_title):
  doc = by_title['Life Without Soul']
  assert entities.entity_type(doc) == 'film'
  rels = {c.relation for c in extractor.extract(doc)}
  assert 'date_of_birth' not in rels


def test_every_passage_is_a_sentence_of_its_page(prepared):
  for doc_id, claims in prepared.claims.items():
    text = prepared.docs[doc_id].text
    for c in claims:
      assert c.subject == doc_id
      assert c.passage in text
      assert c.object_doc is None or c.object_doc in prepared.docs


def test_peerage_suffix_is_part_of_the_name(extractor, by_title):
  # "the son of James Stuart, 1st Earl of Bute and Agnes Mackenzie": the
  # name must not stop at "James Stuart" (that title is a rugby player's).
  got = _triples(extractor, by_title['James Stuart, 2nd Earl of Bute'])
  assert ('father', 'James Stuart, 1st Earl of Bute', None) in got


def test_temporally_impossible_credit_is_dropped():
  film = [
      PageClaim(subject='F', relation='release_year', object='1935'),
      PageClaim(subject='F', relation='composer', object='A', object_doc='A'),
  ]
  person = [PageClaim(subject='A', relation='date_of_birth', object='1978')]
  kept = consistency.drop_implausible({'F': film, 'A': person})
  assert [c.relation for c in kept['F']] == ['release_year']
  person = [PageClaim(subject='A', relation='date_of_birth', object='1903')]
  kept = consistency.drop_implausible({'F': film, 'A': person})
  assert len(kept['F']) == 2
