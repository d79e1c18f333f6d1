"""Links derived from exact mentions of other documents' titles.

For corpora without hyperlinks (the 2Wiki paragraphs), document A links to
B when A's text contains B's title as an exact, case-sensitive token
sequence. A trailing disambiguation such as " (film)" is dropped from the
title first. Matching is greedy longest-first over word tokens with a
dict keyed by the first token, so it is linear in the text length.

Skipped, because exact mentions of them are mostly not references to that
page: titles whose mention key is shared by several documents (ambiguous),
single-word keys shorter than `min_single_word_chars` characters, and keys
that start with a lowercase letter or are only digits.
"""

import dataclasses
import re
from typing import Iterable, Sequence

from search_agent.corpus.record import Document

_TOKEN_RE = re.compile(r'\w+')
_DISAMBIGUATION_RE = re.compile(r'\s*\([^()]*\)\s*$')


@dataclasses.dataclass(frozen=True, kw_only=True)
class TitleLinker:
  """Finds mentions of known titles in text.

  Attributes:
    keys: first token → [(token tuple, doc_id)], longest first.
    skipped: Number of titles not used as link targets (see module doc).
  """

  keys: dict[str, list[tuple[tuple[str, ...], str]]]
  skipped: int

  def mentions(self, text: str, exclude: str | None = None) -> list[str]:
    """doc_ids mentioned in `text`, in first-mention order, deduplicated."""
    tokens = _TOKEN_RE.findall(text)
    found: dict[str, None] = {}
    i = 0
    while i < len(tokens):
      step = 1
      for key, doc_id in self.keys.get(tokens[i], ()):
        if tuple(tokens[i : i + len(key)]) == key:
          if doc_id != exclude:
            found[doc_id] = None
          step = len(key)
          break
      i += step
    return list(found)


def mention_key(title: str) -> tuple[str, ...]:
  """The token sequence a mention of `title` must match."""
  return tuple(_TOKEN_RE.findall(_DISAMBIGUATION_RE.sub('', title)))


def build_linker(
    docs: Iterable[Document], min_single_word_chars: int = 5
) -> TitleLinker:
  """Indexes the titles of `docs` for mention lookup."""
  owners: dict[tuple[str, ...], list[str]] = {}
  for doc in docs:
    owners.setdefault(mention_key(doc.title), []).append(doc.doc_id)
  keys: dict[str, list[tuple[tuple[str, ...], str]]] = {}
  skipped = 0
  for key, ids in owners.items():
    usable = (
        len(ids) == 1
        and key
        and key[0][:1].isupper()
        and not all(t.isdigit() for t in key)
        and (len(key) > 1 or len(key[0]) >= min_single_word_chars)
    )
    if not usable:
      skipped += len(ids)
      continue
    keys.setdefault(key[0], []).append((key, ids[0]))
  for entries in keys.values():
    entries.sort(key=lambda e: -len(e[0]))
  return TitleLinker(keys=keys, skipped=skipped)


def derive_links(
    docs: Sequence[Document], min_single_word_chars: int = 5
) -> tuple[list[Document], str]:
  """Returns the documents with `links` from title mentions, and a note.

  Existing links are kept; derived ones are appended after them.
  """
  linker = build_linker(docs, min_single_word_chars)
  out, total = [], 0
  for doc in docs:
    derived = linker.mentions(doc.text, exclude=doc.doc_id)
    links = tuple(dict.fromkeys(doc.links + tuple(derived)))
    total += len(links) - len(doc.links)
    out.append(dataclasses.replace(doc, links=links))
  note = (
      f'links derived from exact case-sensitive mentions of other titles'
      f' (disambiguation in parentheses dropped); {total} links over'
      f' {len(docs)} documents; {linker.skipped} titles not used as targets'
      f' (ambiguous, lowercase, numeric, or one word under'
      f' {min_single_word_chars} characters)'
  )
  return out, note
