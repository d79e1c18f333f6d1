"""Passage splitting: overlapping word windows that keep their parent doc_id."""

import dataclasses
from typing import Iterable, Iterator

from search_agent.corpus.record import Document


@dataclasses.dataclass(frozen=True, kw_only=True)
class Passage:
  """A window of a document's text.

  Attributes:
    passage_id: `<doc_id>#<ordinal>`, unique within a corpus.
    doc_id: The parent document.
    ordinal: 0-based position of the passage within its document.
    text: The passage text (the window's words joined by single spaces).
  """

  passage_id: str
  doc_id: str
  ordinal: int
  text: str


def window_starts(
    num_words: int, window_words: int, stride_words: int
) -> list[int]:
  """Start offsets of the windows covering `num_words` words.

  Windows start every `stride_words`; the last window is the first one that
  reaches the end, so no word is left out and no window is a pure suffix of
  the one before. An empty text has one (empty) window.
  """
  if window_words < 1 or not 1 <= stride_words <= window_words:
    raise ValueError(
        f'need window_words >= 1 and 1 <= stride_words <= window_words, got'
        f' window {window_words}, stride {stride_words}'
    )
  starts = [0]
  while starts[-1] + window_words < num_words:
    starts.append(starts[-1] + stride_words)
  return starts


def split_passages(
    doc: Document, window_words: int, stride_words: int
) -> list[Passage]:
  """Splits a document's text into overlapping word windows.

  Args:
    doc: The document.
    window_words: Words per passage.
    stride_words: Words between passage starts (<= window_words).

  Returns:
    The passages in document order; at least one, even for an empty text.

  Raises:
    ValueError: if the window or stride is not positive or stride > window.
  """
  words = doc.text.split()
  return [
      Passage(
          passage_id=f'{doc.doc_id}#{i}',
          doc_id=doc.doc_id,
          ordinal=i,
          text=' '.join(words[s : s + window_words]),
      )
      for i, s in enumerate(
          window_starts(len(words), window_words, stride_words)
      )
  ]


def iter_passages(
    docs: Iterable[Document], window_words: int, stride_words: int
) -> Iterator[Passage]:
  """Passages of every document in `docs`, in order."""
  for doc in docs:
    yield from split_passages(doc, window_words, stride_words)
