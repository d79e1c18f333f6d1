"""The 2WikiMultihopQA corpus: a JSON list of `{title, text}` paragraphs."""

import json
import pathlib
import urllib.parse

from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document

BUNDLED_2WIKI = (
    pathlib.Path(__file__).parent / 'data' / '2wikimultihopqa_corpus.json'
)


def wiki_slug(title: str) -> str:
  """`Blue whale` → `Blue_whale` (the doc_id and the URL path)."""
  return '_'.join(title.split())


def wiki_url(title: str) -> str:
  return 'https://en.wikipedia.org/wiki/' + urllib.parse.quote(
      wiki_slug(title), safe="_()',-.:!"
  )


def read_2wiki(path: str | pathlib.Path = BUNDLED_2WIKI) -> list[Document]:
  """Reads the corpus; doc_id = title with underscores (stable, unique).

  Raises:
    CorpusError: for a missing file, a malformed record, or two records
      with the same doc_id.
  """
  path = pathlib.Path(path)
  if not path.is_file():
    raise CorpusError(f'2Wiki corpus {path} does not exist')
  try:
    records = json.loads(path.read_text(encoding='utf-8'))
  except json.JSONDecodeError as e:
    raise CorpusError(f'{path} is not JSON: {e}')
  if not isinstance(records, list):
    raise CorpusError(f'{path}: expected a JSON list of {{title, text}}')
  docs, seen = [], set()
  for i, r in enumerate(records):
    if not isinstance(r, dict) or not isinstance(r.get('title'), str):
      raise CorpusError(f'{path}: record {i} has no string title: {r!r:.100}')
    doc_id = wiki_slug(r['title'])
    if doc_id in seen:
      raise CorpusError(f'{path}: record {i} repeats the title {r["title"]!r}')
    seen.add(doc_id)
    docs.append(
        Document(
            doc_id=doc_id,
            title=r['title'],
            url=wiki_url(r['title']),
            text=str(r.get('text', '')),
        )
    )
  return docs
