"""Tests for the query parser."""

import pytest

from search_agent.search import parser


def test_keywords_phrases_and_site():
  q = parser.parse_query(
      'Director of "The Dark Knight" site:https://EN.Wikipedia.org/wiki/X'
  )
  assert q.terms == ('director', 'of')
  assert q.phrases == ('The Dark Knight',)
  assert q.site == 'en.wikipedia.org'
  assert q.scoring_words() == ('director', 'of', 'the', 'dark', 'knight')


def test_curly_quotes_and_whitespace_in_phrases():
  q = parser.parse_query('\u201cblue   whale\u201d  size')
  assert q.phrases == ('blue whale',)
  assert q.terms == ('size',)


def test_phrase_only_query_and_empty_quotes_ignored():
  q = parser.parse_query('"" "exact words"')
  assert q.terms == ()
  assert q.phrases == ('exact words',)


def test_site_word_inside_phrase_is_not_a_filter():
  q = parser.parse_query('"site:example.com" mirror')
  assert q.site is None
  assert q.phrases == ('site:example.com',)


def test_site_port_and_case():
  assert parser.parse_query('x SITE:Example.COM:8080').site == 'example.com'


@pytest.mark.parametrize(
    'text, message',
    [
        ('a site:x.com site:y.com', 'site: filters'),
        ('"unbalanced phrase', 'unbalanced'),
        ('   ', 'no keywords'),
        ('site:example.com', 'no keywords'),
        ('!!! ---', 'no keywords'),
        ('x' * 1025, 'over the limit'),
        ('a site:', 'names no domain'),
        ('a site:exa$mple.com', 'not a domain'),
    ],
)
def test_malformed_queries_raise_query_error(text, message):
  with pytest.raises(parser.QueryError, match=message):
    parser.parse_query(text)


def test_non_string_query():
  with pytest.raises(parser.QueryError, match='must be a string'):
    parser.parse_query(None)  # type: ignore[arg-type]


def test_max_chars_is_configurable():
  with pytest.raises(parser.QueryError):
    parser.parse_query('abc def', max_chars=3)
  assert parser.parse_query('abc', max_chars=3).terms == ('abc',)


def test_query_error_is_value_error():
  assert issubclass(parser.QueryError, ValueError)


def test_site_on_an_idn_host_is_normalised_to_its_a_label():
  assert parser.parse_query('x site:bücher.de').site == 'xn--bcher-kva.de'
  assert parser.parse_query('x site:BÜCHER.de').site == 'xn--bcher-kva.de'
  assert parser.parse_query('x site:https://www.bücher.de/a').site == (
      'www.xn--bcher-kva.de'
  )
  assert (
      parser.parse_query('x site:xn--bcher-kva.de').site == 'xn--bcher-kva.de'
  )
