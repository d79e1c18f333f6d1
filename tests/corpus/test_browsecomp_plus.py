"""The BrowseComp-Plus corpus reader: JSONL rows {docid, text, url}."""

import json

import pytest

from search_agent.corpus import browsecomp_plus
from search_agent.corpus import sources
from search_agent.corpus.errors import CorpusError


def test_rows_become_documents(tmp_path):
  path = tmp_path / 'corpus.jsonl'
  rows = [
      {'docid': 18639, 'text': '---\ntitle: Queen Arwa University\n---\n'
       'A university in Sanaa.', 'url': 'https://qau.edu.ye/'},
      {'docid': '41759', 'text': '\n# Arwa al-Sulayhi\n\nQueen of Yemen.',
       'url': 'https://en.wikipedia.org/wiki/Arwa_al-Sulayhi'},
      {'docid': '7', 'text': ''},
  ]  # fmt: skip
  path.write_text('\n'.join(json.dumps(r) for r in rows) + '\n\n')
  docs = list(browsecomp_plus.read_browsecomp_plus(path))
  assert [d.doc_id for d in docs] == ['18639', '41759', '7']
  assert docs[0].title == 'Queen Arwa University'
  assert docs[0].text == rows[0]['text'] and docs[0].url == rows[0]['url']
  assert docs[1].title == 'Arwa al-Sulayhi'
  assert (docs[2].title, docs[2].url) == ('', '')
  spec = sources.CorpusSpec(
      kind='browsecomp_plus', path=str(path), derive_links=False
  )
  assert [d.doc_id for d in sources.read_corpus(spec)[0]] == [
      '18639',
      '41759',
      '7',
  ]


def test_bad_rows_name_their_line(tmp_path):
  path = tmp_path / 'bad.jsonl'
  path.write_text('{"docid": "1", "text": "x"}\n{"text": "no id"}\n')
  with pytest.raises(CorpusError, match=r'bad.jsonl:2: not a BrowseComp'):
    list(browsecomp_plus.read_browsecomp_plus(path))
  with pytest.raises(CorpusError, match='does not exist'):
    list(browsecomp_plus.read_browsecomp_plus(tmp_path / 'none.jsonl'))
