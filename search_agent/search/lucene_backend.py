"""The embedded Lucene backend: the three views as Lucene indexes in-process.

Implements `SearchBackend` (and `FusingBackend`, `SnippetBackend`,
`CandidateBackend`) over the layout of `lucene_index.py`, through JPype
(`lucene_jvm.py`). One Java call answers a search: the query's three views,
their weighted RRF, and the first fused documents' titles, URLs and snippets
(`Views.search`; `Views.fused` ranks alone). The snippets' idf comes from a
cache of the terms' document frequencies (the index is read-only). Queries
are analyzed in Java with the index's analysis; the query semantics are the
tantivy backend's (SHOULD terms, MUST phrases with stopword gaps, a
non-scoring site filter; nothing to score matches nothing). BM25 k1/b can
differ per view (tantivy fixes 1.2/0.75).

The JVM releases the GIL: batches run on a thread pool, and a single query
searches its passage view on a second Java thread while the caller's thread
searches the doc and title views (only while a core is spare).
"""

import concurrent.futures
import dataclasses
import functools
import math
import pathlib
from typing import Mapping, Sequence

import jpype
import numpy as np

from search_agent.corpus.record import Document
from search_agent.search import fusion
from search_agent.search import lucene_index
from search_agent.search import lucene_jvm
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.backend import BackendError
from search_agent.search.backend import Candidate
from search_agent.search.backend import VIEWS
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import LeakageGuard
from search_agent.search.parser import ParsedQuery
from search_agent.search.snippets import SnippetQuery

# A document whose snippet Java cuts once it knows more words' terms.
_UNANALYZED = object()

# How many terms' idf a backend keeps (then each new term is looked up).
_IDF_CACHE_TERMS = 1_000_000

# BM25 k1, b per view: Lucene's and tantivy's defaults.
DEFAULT_BM25 = {v: (1.2, 0.75) for v in VIEWS}


class LuceneBackend:
  """Three BM25 views over a Lucene views directory built by index.build."""

  def __init__(
      self,
      index_dir: str | pathlib.Path,
      threads: int = 2,
      *,
      parallel_views: bool = True,
      bm25: Mapping[str, tuple[float, float]] = DEFAULT_BM25,
      java_snippets: bool = True,
  ):
    """Opens the index.

    Args:
      index_dir: A directory written by `lucene_index.LuceneIndexWriter`.
      threads: Worker threads for batches of queries.
      parallel_views: Search a single query's passage view concurrently
        with its doc and title views.
      bm25: `{view: (k1, b)}` for every view.
      java_snippets: Cut snippets in Java (`snippets`); False: every
        snippet is left to the engine's Python `make_snippet`.

    Raises:
      BackendError: if the directory holds no readable index;
        LuceneUnavailable if the JVM side is missing.
    """
    index_dir = pathlib.Path(index_dir)
    self.config = lucene_index.read_config(index_dir)
    if set(bm25) != set(VIEWS):
      raise ValueError(f'bm25 needs (k1, b) for each of {VIEWS}, got {bm25}')
    params = [float(x) for v in VIEWS for x in bm25[v]]
    views_class = lucene_jvm.java_class('Views')
    try:
      self._views = views_class(
          str(index_dir), self.config.stem, self.config.remove_stopwords,
          jpype.JArray(jpype.JFloat)(params), parallel_views,
      )  # fmt: skip
    except jpype.JException as e:
      raise BackendError(f'cannot open the Lucene index in {index_dir}: {e}')
    self._doc_ids = (
        (index_dir / lucene_index.DOC_IDS_FILE).read_text().split('\n')[:-1]
    )
    self._analyzer = QueryAnalyzer(
        stem=self.config.stem, remove_stopwords=self.config.remove_stopwords
    )
    self._pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=max(1, threads), thread_name_prefix='lucene'
    )
    self._strings = jpype.JArray(jpype.JString)
    self._java_snippets = java_snippets
    self._idf: dict[str, float] = {}
    self._num_documents = int(self._views.numDocuments())

  def _args(self, q: ParsedQuery):
    return ' '.join(q.scoring_words()), self._strings(q.phrases), q.site

  def _ids(self, ords) -> list[str]:
    return [self._doc_ids[o] for o in np.asarray(ords).tolist()]

  def _call(self, method, *args):
    try:
      return method(*args)
    except jpype.JException as e:
      raise BackendError(f'Lucene search failed: {e}') from e

  def rank_view(self, q: ParsedQuery, view: str, k: int) -> list[str]:
    """Up to k doc_ids best first in one view (see `view_rankings`)."""
    if view not in VIEWS:
      raise ValueError(f'unknown view {view!r}; views are {VIEWS}')
    index = VIEWS.index(view)
    return self._ids(self._call(self._views.rankView, index, *self._args(q), k))

  def _rank_one(self, q: ParsedQuery, k: int) -> dict[str, list[str]]:
    views = self._call(self._views.viewRankings, *self._args(q), k)
    return {v: self._ids(views[i]) for i, v in enumerate(VIEWS)}

  def view_rankings(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[str]]]:
    """Per query, per view, up to k doc_ids best first (see SearchBackend)."""
    if k < 1:
      raise ValueError(f'k must be >= 1, got {k}')
    if len(queries) == 1:
      return [self._rank_one(queries[0], k)]
    return list(self._pool.map(lambda q: self._rank_one(q, k), queries))

  def _fuse_one(self, q, depths, weights, rrf_k) -> list[tuple[str, float]]:
    flat = np.asarray(
        self._call(self._views.fused, *self._args(q), depths, weights, rrf_k)
    )
    ids = self._ids(flat[0::2].astype(np.int64))
    return list(zip(ids, flat[1::2].tolist()))

  def fused_rankings(
      self,
      queries: Sequence[ParsedQuery],
      depths: Mapping[str, int],
      weights: Mapping[str, float],
      rrf_k: float,
  ) -> list[list[tuple[str, float]]]:
    """Per query, every fused `(doc_id, score)`, best first: the views
    searched to their depths and fused by `fusion.weighted_rrf`'s rule, in
    Java (one bridge call per query).

    Raises:
      ValueError: as `fusion.weighted_rrf` (a view without a weight, a
        negative weight, rrf_k <= -1) or a depth below 1.
    """
    d, w = _fusion_args(depths, weights, rrf_k)
    if len(queries) == 1:
      return [self._fuse_one(queries[0], d, w, float(rrf_k))]
    return list(
        self._pool.map(lambda q: self._fuse_one(q, d, w, float(rrf_k)), queries)
    )

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
    """Per query its first `candidates` fused documents with title, URL
    and, for the first `snipped`, snippet (see `CandidateBackend`): one
    `Views.search` call per query, plus a `snippets` call where Java asked
    for words' terms.

    Raises:
      ValueError: as `fused_rankings`, or one snippet query per query
        missing.
    """
    if len(snippet_queries) != len(queries):
      raise ValueError(
          f'one snippet query per query: {len(queries)} queries,'
          f' {len(snippet_queries)} snippet queries'
      )
    d, w = _fusion_args(depths, weights, rrf_k)
    one = lambda pair: self._candidates_one(
        *pair, d, w, float(rrf_k), candidates, snipped
    )  # fmt: skip
    pairs = list(zip(queries, snippet_queries))
    if len(pairs) == 1:
      return [one(pairs[0])]
    return list(self._pool.map(one, pairs))

  def _candidates_one(self, q, query, d, w, rrf_k, candidates, snipped):
    if query is None or not self._java_snippets:
      query, snipped = None, 0
    fixed, sizes = self._snippet_args(query)
    flat = bytes(
        memoryview(
            self._call(
                self._views.search, *self._args(q), d, w, rrf_k, candidates,
                snipped, *fixed, '', '', *sizes,
            )  # fmt: skip
        )
    )
    head, _, body = flat.partition(b'\n')
    fields = head.split()
    out, again, at = [], [], 0
    for i in range(1, len(fields), 5):
      ordinal, score = int(fields[i]), float(fields[i + 1])
      title, at = _take(body, at, int(fields[i + 2]))
      url, at = _take(body, at, int(fields[i + 3]))
      snippet, at = _take(body, at, int(fields[i + 4]))
      if snippet is _UNANALYZED:
        again.append(len(out))
        snippet = None
      out.append(
          Candidate(
              doc_id=self._doc_ids[ordinal], title=title, url=url,
              score=score, snippet=snippet,
          )  # fmt: skip
      )
    if again:
      retry = self._cut_again(
          [out[i].doc_id for i in again], fixed, _words(body, at), sizes
      )
      for i, cut in zip(again, retry):
        out[i] = dataclasses.replace(out[i], snippet=cut)
    return out, int(fields[0]) > len(out)

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    """Stored documents in input order; None for unknown doc_ids."""
    wanted = list(dict.fromkeys(doc_ids))
    if not wanted:
      return []
    flat = bytes(
        memoryview(self._call(self._views.documents, self._strings(wanted)))
    )
    head, _, body = flat.partition(b'\n')
    numbers = iter(map(int, head.split()))
    found, at = {}, 0
    for n in numbers:
      fields = []
      for _ in range(n):
        size = next(numbers)
        fields.append(body[at : at + size].decode('utf-8'))
        at += size
      if fields:
        doc_id, title, url, text, *links = fields
        found[doc_id] = Document(
            doc_id=doc_id, title=title, url=url, text=text, links=tuple(links)
        )
    return [found.get(d) for d in doc_ids]

  def num_documents(self) -> int:
    return self._num_documents

  def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
    """BM25 idf of index terms in the doc view (for snippet scoring); each
    term's document frequency is read once and kept."""
    terms = list(terms)
    idf = {t: self._idf[t] for t in terms if t in self._idf}
    new = [t for t in dict.fromkeys(terms) if t not in idf]
    if new:
      n = self._num_documents
      dfs = np.asarray(self._call(self._views.docFreqs, self._strings(new)))
      for t, df in zip(new, dfs.tolist()):
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        if len(self._idf) < _IDF_CACHE_TERMS:
          self._idf[t] = idf[t]
    return idf

  def snippets(
      self, doc_ids: Sequence[str], query: SnippetQuery
  ) -> list[str | None]:
    """Per doc_id `snippets.make_snippet`'s snippet of its text, cut in
    Java (`Snippets.java`; no text crosses the bridge); None where Java
    declines (see there) or the id is unknown: the caller cuts those.

    Java keeps this analyzer's term of every candidate word it has been
    told (so terms are tantivy's stems, not Lucene's); a document with a
    word it has not is returned with the new words, which are analyzed
    here and sent with a second call for those documents.
    """
    if not self._java_snippets or not doc_ids:
      return [None] * len(doc_ids)
    fixed, sizes = self._snippet_args(query)
    out, words = self._java_snippets_call(list(doc_ids), fixed, [], sizes)
    again = [i for i, s in enumerate(out) if s is _UNANALYZED]
    if again:
      retry = self._cut_again([doc_ids[i] for i in again], fixed, words, sizes)
      for i, s in zip(again, retry):
        out[i] = s
    return out

  def _cut_again(self, ids, fixed, words, sizes) -> list[str | None]:
    """The snippets of documents Java returned unanalyzed, asked again
    with `words`' terms; None where it still cannot cut one."""
    retry, _ = self._java_snippets_call(ids, fixed, words, sizes)
    return [None if s is _UNANALYZED else s for s in retry]

  def _snippet_args(self, query: SnippetQuery | None):
    """`Views.snippets`' query arguments (terms to extra cases) and sizes
    for `query`; placeholders, never read, for None."""
    if query is None:
      return ('', jpype.JArray(jpype.JDouble)([]), '', '', ''), (1, 1, 0.0, 0.0)
    c = query.config
    fixed = (
        '\n'.join(query.terms), jpype.JArray(jpype.JDouble)(query.idf),
        '\n'.join(map(' '.join, query.phrases)), '\n'.join(query.prefixes),
        query.extra_cases,
    )  # fmt: skip
    return fixed, (c.window_words, c.max_words, float(c.k1), float(c.b))

  def _java_snippets_call(self, ids, fixed, new_words, sizes):
    """`Views.snippets` with the query's `fixed` arguments and the terms of
    `new_words`: (per id its snippet, None or _UNANALYZED; the words Java
    asked for)."""
    terms = [self._analyzer.term(w) or '' for w in new_words]
    flat = bytes(
        memoryview(
            self._call(
                self._views.snippets, self._strings(ids), *fixed,
                '\n'.join(new_words), '\n'.join(terms), *sizes,
            )  # fmt: skip
        )
    )
    head, _, body = flat.partition(b'\n')
    out, at = [], 0
    for size in map(int, head.split()):
      snippet, at = _take(body, at, size)
      out.append(snippet)
    return out, _words(body, at)

  @property
  def analyzer(self) -> QueryAnalyzer:
    """The query analyzer matching this index's analysis (snippets)."""
    return self._analyzer

  def close(self) -> None:
    self._pool.shutdown(wait=True)
    self._views.close()


def _take(body: bytes, at: int, size: int):
  """One field of a Java answer at `at` and the offset after it: the text
  for a byte length, None for -1 (declined) or -3 (not cut), _UNANALYZED
  for -2 (a word Java has not been told)."""
  if size >= 0:
    return body[at : at + size].decode('utf-8'), at + size
  return (_UNANALYZED if size == -2 else None), at


def _words(body: bytes, at: int) -> list[str]:
  """The unanalyzed words that end a Java answer, one per line."""
  rest = body[at:].decode('utf-8')
  return rest.split('\n') if rest else []


def _fusion_args(depths, weights, rrf_k):
  """Java's depths and weights, per view (kept per setting: Java only
  reads them); ValueError as `fusion.weighted_rrf` or for a depth below 1."""
  return _java_fusion_args(
      tuple(sorted(depths.items())), tuple(sorted(weights.items())), rrf_k
  )


@functools.lru_cache(maxsize=64)
def _java_fusion_args(depths, weights, rrf_k):
  depths, weights = dict(depths), dict(weights)
  fusion.weighted_rrf({v: [] for v in VIEWS}, weights, rrf_k)  # checks
  if any(depths.get(v, 0) < 1 for v in VIEWS):
    raise ValueError(f'every view needs a depth >= 1, got {depths}')
  return (
      jpype.JArray(jpype.JInt)([depths[v] for v in VIEWS]),
      jpype.JArray(jpype.JDouble)([float(weights[v]) for v in VIEWS]),
  )


def lucene_engine(
    index_dir: str | pathlib.Path,
    config: EngineConfig = EngineConfig(),
    guard: LeakageGuard | None = None,
    threads: int = 2,
    *,
    parallel_views: bool = True,
    bm25: Mapping[str, tuple[float, float]] | None = None,
    java_snippets: bool = True,
) -> SearchEngine:
  """A SearchEngine over a Lucene views dir, with matching snippet analysis
  and corpus idf (`bm25`: `{view: (k1, b)}`, None = DEFAULT_BM25). The
  caller closes it."""
  backend = LuceneBackend(
      index_dir, threads=threads, parallel_views=parallel_views,
      bm25=bm25 or DEFAULT_BM25, java_snippets=java_snippets,
  )  # fmt: skip
  return SearchEngine(
      backend, config, guard, analyzer=backend.analyzer, idf=backend.term_idf
  )
