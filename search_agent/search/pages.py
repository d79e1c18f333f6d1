"""Paging for the `open` and `find` tools (searchmaster.md, browser tools).

A document is rendered into numbered lines: each paragraph (text between
newlines) has its whitespace collapsed and is wrapped at `line_chars` (words
are never split, so joining the lines with spaces gives the words back); lines
are grouped into pages of `page_lines`. `open(ref_id, cursor)` shows page
`cursor` (from 0); `find(ref_id, pattern)` reports the case-insensitive exact
matches of a pattern with their line and page, so the agent can open the page
that holds a match. Matches may cross line breaks (lines are joined with one
space for matching).
"""

import bisect
import dataclasses
import textwrap

from search_agent.corpus.record import Document


class PageError(ValueError):
  """A cursor past the end of a document."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PageConfig:
  """How documents are paged.

  Attributes:
    line_chars: Width at which paragraphs are wrapped into lines.
    page_lines: Lines per page (50 x 100 chars: ~800 words, about one
      screen of a long article; short 2Wiki paragraphs are one page).
    max_matches: Most matches `find` lists (the total is always reported).
  """

  line_chars: int = 100
  page_lines: int = 50
  max_matches: int = 20

  def __post_init__(self):
    for name in ('line_chars', 'page_lines', 'max_matches'):
      if getattr(self, name) < 1:
        raise ValueError(f'{name} must be >= 1, got {getattr(self, name)}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Page:
  """One page of a document.

  Attributes:
    cursor: Page number, from 0.
    num_pages: Pages in the document (at least 1).
    first_line: Number of the page's first line.
    num_lines: Lines in the document.
    lines: The page's lines.
  """

  cursor: int
  num_pages: int
  first_line: int
  num_lines: int
  lines: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Match:
  """One match of a find pattern.

  Attributes:
    line: Number of the line where the match starts.
    page: Page holding that line (the cursor to open).
    column: Character offset of the match in that line.
    text: The line (and the next one when the match crosses into it).
  """

  line: int
  page: int
  column: int
  text: str


def render_lines(doc: Document, line_chars: int) -> tuple[str, ...]:
  """The document's text as wrapped lines (empty paragraphs dropped)."""
  lines = []
  for paragraph in doc.text.split('\n'):
    words = ' '.join(paragraph.split())
    if words:
      lines.extend(
          textwrap.wrap(
              words,
              width=line_chars,
              break_on_hyphens=False,
              break_long_words=False,
          )
      )
  return tuple(lines)


def get_page(lines: tuple[str, ...], cursor: int, page_lines: int) -> Page:
  """Page `cursor` of `lines`.

  Raises:
    PageError: if the cursor is past the last page.
  """
  num_pages = max(1, -(-len(lines) // page_lines))
  if cursor >= num_pages:
    raise PageError(
        f'cursor {cursor} is past the end: the document has {num_pages}'
        f' page(s), cursor 0 to {num_pages - 1}'
    )
  start = cursor * page_lines
  return Page(
      cursor=cursor,
      num_pages=num_pages,
      first_line=start,
      num_lines=len(lines),
      lines=lines[start : start + page_lines],
  )


# 'İ'.lower() is two characters (i + combining dot), which shifted every
# later offset; it is the only character whose lowercase changes length.
_DOTTED_I = str.maketrans({'\u0130': 'i'})


def _lower(text: str) -> str:
  """Lowercase with one character per character (offsets stay valid)."""
  return text.translate(_DOTTED_I).lower()


def find_matches(
    lines: tuple[str, ...], pattern: str, page_lines: int
) -> list[Match]:
  """All case-insensitive matches of `pattern`, in document order."""
  needle = _lower(' '.join(pattern.split()))
  if not needle:
    return []
  starts, pos = [], 0
  for line in lines:
    starts.append(pos)
    pos += len(line) + 1
  haystack = _lower(' '.join(lines))
  matches, at = [], haystack.find(needle)
  while at >= 0:
    line_no = bisect.bisect_right(starts, at) - 1
    end_line = bisect.bisect_right(starts, at + len(needle) - 1) - 1
    matches.append(
        Match(
            line=line_no,
            page=line_no // page_lines,
            column=at - starts[line_no],
            text=' '.join(lines[line_no : end_line + 1]),
        )
    )
    at = haystack.find(needle, at + 1)
  return matches


def format_page(ref_id: str, doc: Document, page: Page) -> str:
  """The observation of `open`: header, position and numbered lines."""
  last = page.first_line + len(page.lines) - 1
  head = [f'[{ref_id}] {doc.title}', f'URL: {doc.url}']
  if not page.lines:
    head.append('(the document has no text)')
    return '\n'.join(head)
  where = (
      f'Page {page.cursor} of pages 0-{page.num_pages - 1} (lines'
      f' {page.first_line}-{last} of {page.num_lines}).'
  )
  if page.cursor + 1 < page.num_pages:
    where += f' Next page: open(ref_id="{ref_id}", cursor={page.cursor + 1}).'
  body = [f'L{page.first_line + i}: {l}' for i, l in enumerate(page.lines)]
  return '\n'.join(head + [where] + body)


def format_matches(
    ref_id: str, pattern: str, matches: list[Match], max_matches: int
) -> str:
  """The observation of `find`."""
  if not matches:
    return f'No matches for {pattern!r} in [{ref_id}].'
  shown = matches[:max_matches]
  head = f'{len(matches)} match(es) for {pattern!r} in [{ref_id}]'
  if len(shown) < len(matches):
    head += f' (first {len(shown)} shown)'
  body = [f'L{m.line} (page {m.page}): {m.text}' for m in shown]
  return '\n'.join([head + ':'] + body)
