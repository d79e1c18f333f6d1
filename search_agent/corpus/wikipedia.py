"""MediaWiki XML dump reader (`pages-articles*.xml[.bz2]`), streaming."""

import bz2
import pathlib
from typing import Iterator
import xml.etree.ElementTree as ET

from search_agent.corpus import twowiki
from search_agent.corpus import wikitext
from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document


def _local(tag: str) -> str:
  return tag.rsplit('}', 1)[-1]


def _open(path: pathlib.Path):
  if path.suffix == '.bz2':
    return bz2.open(path, 'rb')
  return path.open('rb')


def read_wikipedia_xml(
    path: str | pathlib.Path,
    *,
    include_redirects: bool = False,
    namespaces: tuple[int, ...] = (0,),
) -> Iterator[Document]:
  """Yields one Document per article page of a MediaWiki XML export.

  doc_id and URL follow `twowiki.wiki_slug`/`wiki_url` (English Wikipedia
  URLs); text is `wikitext.clean_wikitext`; links are the article link
  targets as doc_ids (`Foo_bar`), deduplicated in order.

  Args:
    path: The dump (`.xml` or `.xml.bz2`).
    include_redirects: Also yield redirect pages (text = the redirect).
    namespaces: Page namespaces to keep (0 = articles).

  Raises:
    CorpusError: for a missing or malformed file.
  """
  path = pathlib.Path(path)
  if not path.is_file():
    raise CorpusError(f'Wikipedia dump {path} does not exist')
  with _open(path) as f:
    try:
      yield from _pages(f, include_redirects, namespaces)
    except (ET.ParseError, OSError, EOFError) as e:
      raise CorpusError(f'{path}: malformed MediaWiki XML: {e}')


def _pages(f, include_redirects, namespaces) -> Iterator[Document]:
  for _, elem in ET.iterparse(f, events=('end',)):
    if _local(elem.tag) != 'page':
      continue
    fields = {'redirect': False, 'ns': '0', 'title': '', 'text': ''}
    for child in elem.iter():
      name = _local(child.tag)
      if name in ('title', 'ns', 'text'):
        fields[name] = child.text or ''
      elif name == 'redirect':
        fields['redirect'] = True
    elem.clear()
    if int(fields['ns'] or 0) not in namespaces:
      continue
    if fields['redirect'] and not include_redirects:
      continue
    raw = fields['text']
    yield Document(
        doc_id=twowiki.wiki_slug(fields['title']),
        title=fields['title'],
        url=twowiki.wiki_url(fields['title']),
        text=wikitext.clean_wikitext(raw),
        links=tuple(wikitext.article_links(raw)),
    )
