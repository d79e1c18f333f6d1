"""Tests for the corpus readers: 2Wiki, JSONL, MediaWiki XML, parquet."""

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from search_agent.corpus import fineweb
from search_agent.corpus import jsonl
from search_agent.corpus import sources
from search_agent.corpus import twowiki
from search_agent.corpus import wikipedia
from search_agent.corpus import wikitext
from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document


def test_bundled_2wiki_matches_shared_copy(shared_data):
  docs = twowiki.read_2wiki()
  assert len(docs) == 6119
  shared = json.loads(
      (shared_data / 'corpus' / '2wikimultihopqa_corpus.json').read_text()
  )
  assert [d.title for d in docs] == [r['title'] for r in shared]
  first = docs[0]
  assert first.doc_id == 'Teutberga'
  assert first.url == 'https://en.wikipedia.org/wiki/Teutberga'
  theodred = docs[1]
  assert theodred.doc_id == 'Theodred_II_(Bishop_of_Elmham)'
  assert theodred.url.endswith('/wiki/Theodred_II_(Bishop_of_Elmham)')
  assert len({d.doc_id for d in docs}) == len(docs)


def test_2wiki_errors(tmp_path):
  with pytest.raises(CorpusError, match='does not exist'):
    twowiki.read_2wiki(tmp_path / 'nope.json')
  bad = tmp_path / 'dup.json'
  bad.write_text(json.dumps([{'title': 'A', 'text': ''}] * 2))
  with pytest.raises(CorpusError, match='repeats'):
    twowiki.read_2wiki(bad)


def test_jsonl_round_trip_and_line_errors(tmp_path):
  docs = [
      Document(doc_id='a', title='A', url='https://x.org/a', text='t'),
      Document(doc_id='b', title='', url='', text='u', links=('a',)),
  ]
  path = tmp_path / 'c.jsonl'
  assert jsonl.write_jsonl(docs, path) == 2
  assert list(jsonl.read_jsonl(path)) == docs
  path.write_text(path.read_text() + '{"doc_id": "c"}\n')
  with pytest.raises(CorpusError, match=r'c.jsonl:3'):
    list(jsonl.read_jsonl(path))


def test_wikipedia_dump_pages_text_and_links(shared_data):
  dump = shared_data / 'wikipedia' / 'enwiki-pages-articles-sample.xml.bz2'
  all_pages = list(wikipedia.read_wikipedia_xml(dump, include_redirects=True))
  assert [d.title for d in all_pages] == [
      'AccessibleComputing',
      'Computer accessibility',
      'Accessibility',
  ]
  articles = list(wikipedia.read_wikipedia_xml(dump))
  assert [d.doc_id for d in articles] == [
      'Computer_accessibility',
      'Accessibility',
  ]
  acc = articles[1]
  assert acc.url == 'https://en.wikipedia.org/wiki/Accessibility'
  assert acc.text.startswith('Accessibility is the degree to which a product')
  # No markup survives: templates, refs, tables, link brackets, bold quotes.
  assert not re.search(r"\{\{|\}\}|\[\[|\]\]|<ref|'''|\{\|", acc.text)
  assert 'such as the Convention on the Rights of Persons' in acc.text
  assert 'computer screen readers' in acc.text  # [[screen reader]]s
  assert acc.links[:3] == (
      'Convention_on_the_Rights_of_Persons_with_Disabilities',
      'Assistive_technology',
      'Usability',
  )
  assert not any(':' in l and l.split(':')[0] in ('File', 'Category')
                 for l in acc.links)  # fmt: skip


def test_wikipedia_dump_has_325_link_occurrences(shared_data):
  """The README's 325 [[links]]: 324 in page texts + 1 in a revision comment."""
  import bz2  # pylint: disable=g-import-not-at-top

  dump = shared_data / 'wikipedia' / 'enwiki-pages-articles-sample.xml.bz2'
  raw = bz2.open(dump).read().decode()
  assert raw.count('[[') == 325
  texts = re.findall(r'<text[^>]*>(.*?)</text>', raw, re.S)
  assert sum(len(wikitext.raw_link_targets(t)) for t in texts) == 324


def test_clean_wikitext_by_hand():
  src = (
      "{{Infobox|a={{nested|x}}}}'''Foo''' is a [[bar (thing)|bar]] in"
      ' [[Baz]]s.<ref name="r">{{cite web|url=x}}</ref> See'
      ' [http://example.com the site].\n{| class="t"\n| cell\n|}\n'
      '== History ==\n* item [[File:X.jpg|thumb|cap [[Q]]]]\n'
      '[[Category:Things]][[de:Foo]]<!-- hidden -->'
  )
  assert wikitext.clean_wikitext(src) == (
      'Foo is a bar in Bazs. See the site.\n\nHistory\nitem'
  )
  assert wikitext.article_links(src) == ['Bar_(thing)', 'Baz', 'Q']


def _write_parquet(path, rows):
  table = pa.table(
      {
          'text': [r[0] for r in rows],
          'id': [r[1] for r in rows],
          'url': [r[2] for r in rows],
          'dump': ['CC-MAIN-2024-10'] * len(rows),
      }
  )
  pq.write_table(table, path)


def test_fineweb_parquet(tmp_path):
  path = tmp_path / 'part.parquet'
  long_line = 'word ' * 60
  _write_parquet(
      path,
      [
          ('My Page Title\nBody text here.', '<urn:1>', 'https://a.com/x'),
          (long_line + '\nmore', '<urn:2>', 'https://b.com/y'),
      ],
  )
  docs = list(fineweb.read_fineweb_parquet(path))
  assert [d.doc_id for d in docs] == ['<urn:1>', '<urn:2>']
  assert docs[0].title == 'My Page Title'
  assert docs[0].text == 'My Page Title\nBody text here.'
  assert docs[1].title == ''
  assert list(fineweb.read_fineweb_parquet(tmp_path)) == docs  # directory
  pq.write_table(pa.table({'text': ['x']}), tmp_path / 'bad.parquet')
  with pytest.raises(CorpusError, match='lacks columns'):
    list(fineweb.read_fineweb_parquet(tmp_path / 'bad.parquet'))


def test_sources_dispatch_and_limits(tmp_path):
  docs, note = sources.read_corpus(sources.CorpusSpec(max_docs=50))
  docs = list(docs)
  assert len(docs) == 50 and 'derived' in note
  with pytest.raises(CorpusError, match='needs a path'):
    sources.CorpusSpec(kind='jsonl')
  with pytest.raises(CorpusError, match='unknown corpus kind'):
    sources.CorpusSpec(kind='csv', path='x')


def test_reader_errors_name_the_problem(tmp_path):
  with pytest.raises(CorpusError, match='does not exist'):
    list(jsonl.read_jsonl(tmp_path / 'none.jsonl'))
  bad_xml = tmp_path / 'dump.xml'
  bad_xml.write_text('<mediawiki><page><title>x</title>')
  with pytest.raises(CorpusError, match='malformed MediaWiki XML'):
    list(wikipedia.read_wikipedia_xml(bad_xml))
  not_parquet = tmp_path / 'x.parquet'
  not_parquet.write_text('hello')
  with pytest.raises(CorpusError, match='not a readable parquet'):
    list(fineweb.read_fineweb_parquet(not_parquet))
  _write_parquet(tmp_path / 'e.parquet', [('t', '', 'https://a.com')])
  with pytest.raises(CorpusError, match='empty id'):
    list(fineweb.read_fineweb_parquet(tmp_path / 'e.parquet'))


def test_sources_link_notes(tmp_path, shared_data):
  path = tmp_path / 'c.jsonl'
  jsonl.write_jsonl(
      [Document(doc_id='a', title='A', url='', text='', links=('b',))], path
  )
  spec = sources.CorpusSpec(kind='jsonl', path=str(path), derive_links=False)
  docs, note = sources.read_corpus(spec)
  assert [d.links for d in docs] == [('b',)] and 'as given' in note
  dump = shared_data / 'wikipedia' / 'enwiki-pages-articles-sample.xml.bz2'
  spec = sources.CorpusSpec(
      kind='wikipedia_xml', path=str(dump), derive_links=False, max_docs=1
  )
  docs, note = sources.read_corpus(spec)
  assert len(list(docs)) == 1 and 'wikilinks' in note
