"""The contract every search backend (tantivy, OpenSearch, ...) implements.

A backend answers, for a batch of parsed queries, one ranked list of doc_ids
per view (`VIEWS`): BM25 over full documents, over passages (mapped to their
parent doc_ids, duplicates removed keeping the first occurrence) and over
titles. In every view the site filter applies (URL host equals the domain or
ends with '.' + domain) and every quoted phrase must occur in the view's field
(`text` for doc, the passage text for passage, `title` for title). Fusion,
snippets and the leakage guard live above the backend (`engine.py`).
"""

import dataclasses
from typing import Mapping, Protocol, runtime_checkable, Sequence

from search_agent.corpus.record import Document
from search_agent.search.parser import ParsedQuery
from search_agent.search.snippets import SnippetQuery

VIEWS = ('doc', 'passage', 'title')


class BackendError(RuntimeError):
  """A backend failed (index missing or corrupt, server unreachable, ...)."""


def admit_doc_id(doc_id: str, seen: set[str]) -> None:
  """Adds a new doc_id to `seen`; BackendError if empty, multi-line or seen.

  A line break is '\\n' or '\\r': doc_ids.txt is read back with universal
  newlines (Python) and `Files.readAllLines` (the Lucene backend's Java).
  """
  if '\n' in doc_id or '\r' in doc_id or not doc_id:
    raise BackendError(f'doc_id {doc_id!r} is empty or has a line break')
  if doc_id in seen:
    raise BackendError(f'duplicate doc_id {doc_id!r}; doc_ids must be unique')
  seen.add(doc_id)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IndexBuildConfig:
  """How a corpus is turned into the three views.

  Attributes:
    passage_window_words: Words per passage. 128 words: long enough to hold
      a few sentences of evidence, short enough that BM25 on a passage
      rewards terms that co-occur locally in a long web page. Documents no
      longer than the window (most 2Wiki paragraphs, ~71 words) are a single
      passage.
    passage_stride_words: Words between passage starts. 96 (32 words of
      overlap), so a sentence of up to ~32 words that straddles a boundary
      appears whole in some passage.
    remove_stopwords: Drop English stopwords at index and query time
      (ANCHORS.md: 2.4x faster tantivy queries). Phrase queries then match
      on the remaining words, with stopwords as position gaps.
    stem: Apply the English (Porter/Snowball) stemmer.
  """

  passage_window_words: int = 128
  passage_stride_words: int = 96
  remove_stopwords: bool = True
  stem: bool = True

  def __post_init__(self):
    if self.passage_window_words < 1:
      raise ValueError(
          f'passage_window_words must be >= 1, got {self.passage_window_words}'
      )
    if not 1 <= self.passage_stride_words <= self.passage_window_words:
      raise ValueError(
          'passage_stride_words must be in [1, passage_window_words], got'
          f' {self.passage_stride_words} (window'
          f' {self.passage_window_words}); a larger stride would skip words'
      )


class SearchBackend(Protocol):
  """One retrieval backend over one built corpus."""

  def view_rankings(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[str]]]:
    """Per query, per view in `VIEWS`, up to k doc_ids best first.

    Args:
      queries: Parsed queries.
      k: Depth per view (after passage → parent mapping and deduplication).

    Returns:
      One `{view: [doc_id, ...]}` per query, every view present (possibly
      empty).

    Raises:
      BackendError: if the backend cannot answer.
    """
    ...

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    """The stored documents, None for an unknown doc_id, in input order."""
    ...

  def num_documents(self) -> int:
    """Number of documents in the doc view."""
    ...

  def close(self) -> None:
    """Releases files, threads and connections."""
    ...


@runtime_checkable
class FusingBackend(Protocol):
  """A backend that also fuses the views itself (one call per query).

  `SearchEngine` uses it instead of `view_rankings` + `fusion.weighted_rrf`;
  the result must be what those would give.
  """

  def fused_rankings(
      self,
      queries: Sequence[ParsedQuery],
      depths: Mapping[str, int],
      weights: Mapping[str, float],
      rrf_k: float,
  ) -> list[list[tuple[str, float]]]:
    """Per query, every fused `(doc_id, score)`, best first (unguarded):
    each view searched to `depths[view]`, weighted RRF with `rrf_k`."""
    ...


@runtime_checkable
class SnippetBackend(Protocol):
  """A backend that also cuts snippets of its documents itself.

  `SearchEngine` uses it where the query allows (`snippets.snippet_query`)
  and the engine's analyzer is the backend's (`analyzer`); each snippet
  must be `snippets.make_snippet`'s for the document's text.
  """

  @property
  def analyzer(self):
    """The query analyzer matching the backend's own analysis."""
    ...

  def snippets(
      self, doc_ids: Sequence[str], query: SnippetQuery
  ) -> list[str | None]:
    """Per doc_id its snippet, or None where the caller must cut it."""
    ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class Candidate:
  """One fused document with what a hit shows (`CandidateBackend`).

  Attributes:
    doc_id: The document's id.
    title: Its title.
    url: Its URL.
    score: Its fused weighted-RRF score.
    snippet: Its snippet, or None where the caller must cut it.
  """

  doc_id: str
  title: str
  url: str
  score: float
  snippet: str | None


@runtime_checkable
class CandidateBackend(Protocol):
  """A fusing, snippet-cutting backend that answers a query's first fused
  documents with their titles, URLs and snippets in one call.

  `SearchEngine` uses it instead of `fused_rankings`, `get_documents` and
  `snippets` where it would use `SnippetBackend` and no reranker is set;
  the candidates must be the first of `fused_rankings`, with the stored
  title and URL and `snippets`' snippet.
  """

  def fused_candidates(
      self,
      queries: Sequence[ParsedQuery],
      snippet_queries: Sequence[SnippetQuery | None],
      depths: Mapping[str, int],
      weights: Mapping[str, float],
      rrf_k: float,
      candidates: int,
      snipped: int,
  ) -> list[tuple[list[Candidate], bool]]:
    """Per query its first `candidates` fused documents, best first, the
    first `snipped` with their snippets (None where the backend declined
    one: the caller cuts it; all None where the query's `snippet_queries`
    entry is None), and whether more documents fused."""
    ...
