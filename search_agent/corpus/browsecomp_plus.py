"""The BrowseComp-Plus corpus: JSONL rows `{docid, text, url}`.

The published corpus (Tevatron/browsecomp-plus-corpus, ~100k web pages) has
one JSON object a line with the document id `docid` (a numeric string, the
id its qrels and `[docid]` citations use), the page text and its URL. It
has no title field: a title comes from a leading front-matter block
(`---` / `title: ...` / `---`) when the text has one, else from its first
non-empty line (at most 200 characters, Markdown heading marks dropped).
Rows carry no links.
"""

import json
import pathlib
import re
from typing import Iterator

from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document

_FRONT_TITLE = re.compile(
    r'\A---\s*\n(?:.*\n)*?title:\s*(.+)\n(?:.*\n)*?---', re.M
)
_TITLE_CHARS = 200


def title_of(text: str) -> str:
  """The title of a page text (front matter, else its first line)."""
  match = _FRONT_TITLE.match(text)
  if match:
    return match.group(1).strip().strip('"\'')[:_TITLE_CHARS]
  for line in text.splitlines():
    line = line.strip().lstrip('#').strip()
    if line:
      return line[:_TITLE_CHARS]
  return ''


def read_browsecomp_plus(path: str | pathlib.Path) -> Iterator[Document]:
  """Yields the documents of a BrowseComp-Plus corpus JSONL file.

  Raises:
    CorpusError: for a missing file or a row without docid/text (with its
      line number).
  """
  path = pathlib.Path(path)
  if not path.is_file():
    raise CorpusError(f'BrowseComp-Plus corpus {path} does not exist')
  with path.open(encoding='utf-8') as f:
    for lineno, line in enumerate(f, start=1):
      if not line.strip():
        continue
      try:
        row = json.loads(line)
        docid, text = str(row['docid']), str(row['text'])
      except (ValueError, TypeError, KeyError) as e:
        raise CorpusError(
            f'{path}:{lineno}: not a BrowseComp-Plus row {{docid, text,'
            f' url}}: {e!r}'
        ) from e
      yield Document(
          doc_id=docid,
          title=title_of(text),
          url=str(row.get('url') or ''),
          text=text,
      )
