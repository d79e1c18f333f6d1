"""Tests for open/find paging."""

import json

import pytest

from search_agent.corpus.record import Document
from search_agent.search import pages


@pytest.fixture(scope='module')
def long_doc(shared_data):
  """A long document: 40 real 2Wiki paragraphs, one per line."""
  path = shared_data / 'corpus' / '2wikimultihopqa_corpus.json'
  rows = json.loads(path.read_text())[:40]
  text = '\n'.join(r['text'] for r in rows)
  return Document(doc_id='d', title='Forty', url='https://x.org/40', text=text)


def test_lines_wrap_paragraphs_and_pages_cover_everything(long_doc):
  lines = pages.render_lines(long_doc, line_chars=60)
  assert all(len(l) <= 60 for l in lines)
  assert ' '.join(lines).split() == long_doc.text.split()
  first = pages.get_page(lines, 0, page_lines=25)
  assert first.num_pages == -(-len(lines) // 25)
  seen = []
  for c in range(first.num_pages):
    page = pages.get_page(lines, c, 25)
    assert page.first_line == c * 25
    seen.extend(page.lines)
  assert tuple(seen) == lines
  with pytest.raises(pages.PageError, match='cursor 0 to'):
    pages.get_page(lines, first.num_pages, 25)


def test_page_observation_says_where_and_how_to_continue(long_doc):
  lines = pages.render_lines(long_doc, 100)
  text = pages.format_page('r3', long_doc, pages.get_page(lines, 0, 10))
  assert text.startswith('[r3] Forty\nURL: https://x.org/40\nPage 0 of')
  assert 'open(ref_id="r3", cursor=1)' in text
  assert f'L0: {lines[0]}' in text and f'L9: {lines[9]}' in text
  assert 'L10:' not in text
  empty = Document(doc_id='e', title='E', url='u', text='  \n ')
  assert 'no text' in pages.format_page(
      'r1', empty, pages.get_page(pages.render_lines(empty, 100), 0, 10)
  )


def test_find_reports_line_page_and_column():
  doc = Document(
      doc_id='d',
      title='t',
      url='u',
      text='Alpha beta gamma.\nDelta ALPHA  beta epsilon alpha\nzeta',
  )
  lines = pages.render_lines(doc, 12)
  # Lines: 'Alpha beta', 'gamma.', 'Delta ALPHA', 'beta epsilon', 'alpha',
  # 'zeta'.
  assert lines[2] == 'Delta ALPHA'
  found = pages.find_matches(lines, 'alpha beta', page_lines=2)
  assert [(m.line, m.page, m.column) for m in found] == [(0, 0, 0), (2, 1, 6)]
  assert found[1].text == 'Delta ALPHA beta epsilon'  # crosses a line break
  assert len(pages.find_matches(lines, 'ALPHA', 2)) == 3
  assert pages.find_matches(lines, 'omega', 2) == []
  out = pages.format_matches(
      'r1', 'alpha', pages.find_matches(lines, 'a', 2), 2
  )
  assert 'first 2 shown' in out and out.count('\nL') == 2
  assert 'No matches' in pages.format_matches('r1', 'omega', [], 5)


def test_find_offsets_survive_a_dotted_capital_i():
  # 'İ'.lower() is 2 characters: offsets after it drifted, so 'ta' (line 0,
  # column 7) was reported on line 1 with the wrong text.
  lines = ('İİİİİİ ta', 'xyz')
  (m,) = pages.find_matches(lines, 'ta', page_lines=10)
  assert (m.line, m.column, m.text) == (0, 7, 'İİİİİİ ta')
  assert pages.find_matches(('İstanbul',), 'istanbul', 10)[0].column == 0
