"""The search pipeline: parse → three views → weighted RRF → guard → snippets.

`SearchEngine.search(queries, k) -> list[list[Hit]]` is the one call shape
(pyserini/faiss style). A malformed query raises `QueryError` for the whole
call; batch callers that want per-query errors use `search_or_errors`,
which returns the `QueryError` in that query's slot instead.
"""

import dataclasses
from typing import Callable, Mapping, Sequence

from search_agent.corpus.record import Document
from search_agent.search import fusion
from search_agent.search import parser
from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.backend import BackendError
from search_agent.search.backend import Candidate
from search_agent.search.backend import CandidateBackend
from search_agent.search.backend import FusingBackend
from search_agent.search.backend import SearchBackend
from search_agent.search.backend import SnippetBackend
from search_agent.search.guard import LeakageGuard
from search_agent.search.parser import ParsedQuery

Reranker = Callable[[ParsedQuery, list['Hit']], list['Hit']]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hit:
  """One search result.

  Attributes:
    doc_id: The document's id in the corpus.
    title: Its title.
    url: Its URL.
    snippet: Query-focused excerpt (at most `SnippetConfig.max_words`).
    score: Fused weighted-RRF score (higher is better).
  """

  doc_id: str
  title: str
  url: str
  snippet: str
  score: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class EngineConfig:
  """Search pipeline config_lib.

  Attributes:
    rrf_k: RRF rank constant (seed: 5).
    weights: Fusion weight per view (seed: doc 1.0, passage 0.75,
      title 0.75).
    depth_factor: Each view is searched to depth `depth_factor * k`
      (at least `min_depth`), so documents ranked low in one view can
      still rise by accumulating contributions.
    view_depth_factor: Per-view override of `depth_factor` (a view not
      named uses `depth_factor`); the backend is searched to the deepest
      and each view's list cut to its own depth before fusion.
    min_depth: Smallest per-view depth.
    max_k: Largest k a caller may ask for.
    max_query_chars: Longest accepted query.
    snippet: Snippet window and budget.
  """

  rrf_k: float = fusion.DEFAULT_RRF_K
  weights: Mapping[str, float] = dataclasses.field(
      default_factory=lambda: dict(fusion.DEFAULT_WEIGHTS)
  )
  depth_factor: int = 5
  view_depth_factor: Mapping[str, int] = dataclasses.field(default_factory=dict)
  min_depth: int = 20
  max_k: int = 100
  max_query_chars: int = parser.DEFAULT_MAX_QUERY_CHARS
  snippet: snippets.SnippetConfig = snippets.SnippetConfig()


def snippet_words_config(words: int) -> EngineConfig:
  """The default settings with excerpts of at most `words` words (0 = the
  seed's budget), the window widened to hold them."""
  if not words:
    return EngineConfig()
  window = max(words, snippets.SnippetConfig().window_words)
  return EngineConfig(
      snippet=snippets.SnippetConfig(window_words=window, max_words=words)
  )


def _check_batch(queries) -> None:
  if isinstance(queries, str):
    raise TypeError(
        'search() takes a list of query strings, got one string; wrap it:'
        ' search([query], k)'
    )


class SearchEngine:
  """Fused three-view search with snippets over one backend."""

  def __init__(
      self,
      backend: SearchBackend,
      config: EngineConfig = EngineConfig(),
      guard: LeakageGuard | None = None,
      *,
      analyzer: QueryAnalyzer | None = None,
      idf: snippets.IdfFn | None = None,
      reranker: Reranker | None = None,
  ):
    """Wires the pipeline.

    Args:
      backend: Where the views are searched.
      config: Fusion, depth and snippet config_lib.
      guard: Leakage guard applied to results (default patterns if None).
      analyzer: Snippet analyzer; must match the index (default: stemmed,
        stopwords removed, as `IndexBuildConfig`'s defaults).
      idf: Corpus idf for snippet BM25 (None: document-local).
      reranker: Optional `(query, hits) -> hits` applied to the top
        `k` guarded hits before snippets are final (off by default).
    """
    self.backend = backend
    self.config = config
    self.guard = guard or LeakageGuard()
    self.analyzer = analyzer or QueryAnalyzer(stem=True, remove_stopwords=True)
    self.idf = idf
    self.reranker = reranker

  def view_depths(self, k: int) -> dict[str, int]:
    """How deep each view's list is, for top-k results."""
    c = self.config
    return {
        v: max(c.min_depth, c.view_depth_factor.get(v, c.depth_factor) * k)
        for v in c.weights
    }

  def fused_rankings(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[list[tuple[str, float]]]:
    """Per query, every fused `(doc_id, score)`, best first (unguarded)."""
    depths = self.view_depths(k)
    if isinstance(self.backend, FusingBackend):
      return self.backend.fused_rankings(
          queries, depths, self.config.weights, self.config.rrf_k
      )
    rankings = self.backend.view_rankings(queries, max(depths.values()))
    return [
        fusion.weighted_rrf(
            {v: ids[: depths.get(v, len(ids))] for v, ids in r.items()},
            self.config.weights,
            self.config.rrf_k,
        )
        for r in rankings
    ]

  def parse(self, query: str) -> ParsedQuery:
    return parser.parse_query(query, max_chars=self.config.max_query_chars)

  def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
    """Top-k hits per query.

    Raises:
      QueryError: if any query is malformed (nothing is searched).
      ValueError: if k is not in [1, config.max_k].
      BackendError: if the backend fails.
    """
    _check_batch(queries)
    return self.search_parsed([self.parse(q) for q in queries], k)

  def search_or_errors(
      self, queries: Sequence[str], k: int
  ) -> list[list[Hit] | parser.QueryError]:
    """Like `search`, with a malformed query's QueryError in its slot."""
    _check_batch(queries)
    parsed, out = [], []
    for q in queries:
      try:
        parsed.append(self.parse(q))
        out.append(None)
      except parser.QueryError as e:
        out.append(e)
    hits = iter(self.search_parsed(parsed, k))
    return [next(hits) if slot is None else slot for slot in out]

  def search_parsed(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[list[Hit]]:
    """Top-k hits per already parsed query."""
    if not 1 <= k <= self.config.max_k:
      raise ValueError(f'k must be in [1, {self.config.max_k}], got {k}')
    if not queries:
      return []
    if self._one_call():
      return self._search_candidates(queries, k)
    return self._search_views(queries, k)

  def _search_views(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[list[Hit]]:
    """Fused rankings, then documents, then snippets."""
    fused = self.fused_rankings(queries, k)
    docs = self._documents([f[: k + 2] for f in fused])
    out = []
    for q, ranked in zip(queries, fused):
      hits = self._guarded_top_k(ranked, k, docs)
      if self.reranker is not None:
        hits = self.reranker(q, hits)[:k]
      out.append(self._with_snippets(q, hits, docs))
    return out

  def _one_call(self) -> bool:
    """Whether the backend answers fusion, titles and snippets in one call
    (`CandidateBackend`): only with its own analyzer and no reranker."""
    return (
        self.reranker is None
        and isinstance(self.backend, CandidateBackend)
        and self.backend.analyzer is self.analyzer
    )

  def _search_candidates(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[list[Hit]]:
    """`_search_views`' hits from the backend's first fused candidates (as
    many as it fetches documents for); a query whose candidates the guard
    thins below k while more fused goes the general way."""
    snippet = [self._snippet_query(q) for q in queries]
    answers = self.backend.fused_candidates(
        queries, [query for _, query in snippet], self.view_depths(k),
        self.config.weights, self.config.rrf_k, k + 2, k,
    )  # fmt: skip
    out = []
    for q, (idf, query), (candidates, more) in zip(queries, snippet, answers):
      kept = [
          (i, c) for i, c in enumerate(candidates)
          if not self.guard.is_blocked(c.url)
      ][:k]  # fmt: skip
      if len(kept) < k and more:
        out.extend(self._search_views([q], k))
      else:
        out.append(self._candidate_hits(q, kept, k, idf, query))
    return out

  def _candidate_hits(
      self,
      q: ParsedQuery,
      kept: list[tuple[int, Candidate]],
      snipped: int,
      idf: snippets.IdfFn | None,
      query: snippets.SnippetQuery | None,
  ) -> list[Hit]:
    """Hits of (position, candidate) pairs: the backend cuts the snippets
    of candidates past the first `snipped` (it was not asked to); those it
    left uncut are cut here from the document's text."""
    unasked = [c.doc_id for i, c in kept if i >= snipped]
    cut = {}
    if unasked and query is not None:
      cut = dict(zip(unasked, self.backend.snippets(unasked, query)))
    texts = [
        c.doc_id for _, c in kept
        if c.snippet is None and cut.get(c.doc_id) is None
    ]  # fmt: skip
    docs = self._documents([[(d, 0) for d in texts]]) if texts else {}
    for d in texts:
      if d not in docs:
        raise BackendError(
            f'the backend ranked {d!r} but cannot return it: the index is'
            ' inconsistent; rebuild it'
        )
      cut[d] = self._snippet_here(q, docs[d].text, idf)
    return [
        Hit(
            doc_id=c.doc_id, title=c.title, url=c.url, score=c.score,
            snippet=cut[c.doc_id] if c.snippet is None else c.snippet,
        )  # fmt: skip
        for _, c in kept
    ]

  def _snippet_query(
      self, q: ParsedQuery
  ) -> tuple[snippets.IdfFn | None, snippets.SnippetQuery | None]:
    """The query's snippet idf and, where a backend may cut its snippets,
    its `SnippetQuery` (None: `make_snippet` cuts them)."""
    idf = self.query_idf(q)
    return idf, snippets.snippet_query(
        q.terms, q.phrases, self.analyzer, idf, self.config.snippet
    )

  def query_idf(self, q: ParsedQuery) -> snippets.IdfFn | None:
    """Corpus idf of the query's terms for its snippets, looked up once per
    query (None: snippets use document-local idf)."""
    if self.idf is None:
      return None
    terms = sorted(set(self.analyzer.terms(' '.join(q.scoring_words()))))
    weights = dict(self.idf(terms))
    return lambda _: weights

  def _documents(self, doc_id_lists) -> dict[str, Document]:
    wanted = list(dict.fromkeys(d for ids in doc_id_lists for d, _ in ids))
    got = self.backend.get_documents(wanted)
    return {d: doc for d, doc in zip(wanted, got) if doc is not None}

  def _guarded_top_k(self, ranked, k, docs) -> list[Hit]:
    hits, start = [], 0
    while len(hits) < k and start < len(ranked):
      chunk = ranked[start : start + max(k, 8)]
      missing = [d for d, _ in chunk if d not in docs]
      if missing:
        docs.update(self._documents([[(d, 0) for d in missing]]))
      for doc_id, score in chunk:
        doc = docs.get(doc_id)
        if doc is None:
          raise BackendError(
              f'the backend ranked {doc_id!r} but cannot return it: the'
              ' index is inconsistent; rebuild it'
          )
        if self.guard.is_blocked(doc.url):
          continue
        hits.append(
            Hit(doc_id=doc_id, title=doc.title, url=doc.url, snippet='',
                score=score)
        )  # fmt: skip
        if len(hits) == k:
          break
      start += len(chunk)
    return hits

  def _with_snippets(self, q, hits: list[Hit], docs) -> list[Hit]:
    """The hits with their snippets: cut by the backend where it can
    (`SnippetBackend`, with this engine's analyzer), the rest here."""
    idf = self.query_idf(q)
    cut: list[str | None] = [None] * len(hits)
    backend = self.backend
    if (
        hits
        and isinstance(backend, SnippetBackend)
        and backend.analyzer is self.analyzer
    ):
      query = snippets.snippet_query(
          q.terms, q.phrases, self.analyzer, idf, self.config.snippet
      )
      if query is not None:
        cut = backend.snippets([h.doc_id for h in hits], query)
    return [
        dataclasses.replace(
            h,
            snippet=c
            if c is not None
            else self._snippet_here(q, docs[h.doc_id].text, idf),
        )
        for h, c in zip(hits, cut)
    ]

  def _snippet_here(
      self, q: ParsedQuery, text: str, idf: snippets.IdfFn | None
  ) -> str:
    """`make_snippet`'s snippet of a text for the query, cut in Python."""
    return snippets.make_snippet(
        text, q.terms, q.phrases, self.analyzer, idf, self.config.snippet
    )

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    return self.backend.get_documents(doc_ids)

  def num_documents(self) -> int:
    return self.backend.num_documents()

  def close(self) -> None:
    self.backend.close()
