"""The embedded search backend: tantivy indexes on disk, no server.

Implements `SearchBackend` over the layout of `tantivy_index.py`. Queries
are built from `ParsedQuery` directly (no query-string syntax to escape):
each keyword and phrase word is a SHOULD term clause (BM25, k1=1.2,
b=0.75), each quoted phrase a MUST phrase clause in the view's field, and
the site filter a zero-scoring MUST term on the indexed host suffixes.
Words the analyzer drops (stopwords) constrain nothing: they leave a
position gap, so "lord of the rings" also matches "lord X Y rings" (as
Elasticsearch's match_phrase over a stop filter does); a phrase made only of
stopwords is no constraint, and a query made only of stopwords matches
nothing. Phrases match stemmed forms ("blue whales" for "blue whale").

tantivy releases the GIL while searching: batches run on a thread pool, and
a single query (`parallel_views`) searches its passage view on a second pool
while the calling thread searches the doc and title views, so one client's
latency is about the slowest view rather than the sum of the three (only
while a core is spare: with as many searches in flight as cores, views run
one after another on the caller's thread).
"""

import concurrent.futures
import math
import os
import pathlib
import threading
from typing import Sequence

import tantivy

from search_agent.corpus.record import Document
from search_agent.search import tantivy_index
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.backend import BackendError
from search_agent.search.backend import VIEWS
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import LeakageGuard
from search_agent.search.parser import ParsedQuery

_MUST = tantivy.Occur.Must
_SHOULD = tantivy.Occur.Should
# Passage hits fetched per wanted parent (several passages of one document
# often rank together); grown 4x while parents are still missing.
_PASSAGE_OVERFETCH = 3


class TantivyBackend:
  """Three BM25 views over a tantivy index directory built by index.build."""

  def __init__(
      self,
      index_dir: str | pathlib.Path,
      threads: int = 2,
      *,
      parallel_views: bool = True,
  ):
    """Opens the index.

    Args:
      index_dir: A directory written by `tantivy_index.IndexWriter`.
      threads: Worker threads for batches of queries.
      parallel_views: Search a single query's passage view concurrently
        with its doc and title views (False: one after another).

    Raises:
      BackendError: if the directory holds no readable index.
    """
    config, doc_index, passage_index, doc_ids = tantivy_index.open_indexes(
        pathlib.Path(index_dir)
    )
    self.config = config
    self._doc_schema = doc_index.schema
    self._passage_schema = passage_index.schema
    self._doc_searcher = doc_index.searcher()
    self._passage_searcher = passage_index.searcher()
    self._doc_ids = doc_ids
    if len(doc_ids) != self._doc_searcher.num_docs:
      raise BackendError(
          f'{index_dir}: {len(doc_ids)} doc_ids but'
          f' {self._doc_searcher.num_docs} indexed documents; rebuild it'
      )
    self._analyzer = QueryAnalyzer(
        stem=config.stem, remove_stopwords=config.remove_stopwords
    )
    self._pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=max(1, threads), thread_name_prefix='tantivy'
    )
    # Its own pool: a batch worker never waits on a view of its own pool.
    # Views run concurrently only while fewer single-query searches than
    # cores are in flight: with every core busy, a search queued on the
    # pool would wait behind the callers' threads (at 16 clients on 2 cores
    # that halved QPS), so each caller then searches its views itself.
    self._cores = max(2, os.cpu_count() or 2)
    self._view_pool = (
        concurrent.futures.ThreadPoolExecutor(
            max_workers=self._cores, thread_name_prefix='tantivy-view'
        )
        if parallel_views
        else None
    )
    self._in_flight = 0
    self._lock = threading.Lock()

  def _query(self, schema, field: str, q: ParsedQuery):
    clauses = []
    for word in self._analyzer.terms(' '.join(q.scoring_words())):
      clauses.append((_SHOULD, tantivy.Query.term_query(schema, field, word)))
    for phrase in q.phrases:
      words = self._analyzer.phrase(phrase)
      if len(words) == 1:
        sub = tantivy.Query.term_query(schema, field, words[0][1])
        clauses.append((_MUST, sub))
      elif len(words) > 1:
        sub = tantivy.Query.phrase_query(schema, field, words)
        clauses.append((_MUST, sub))
    if not clauses:
      return None
    if q.site is not None:
      site = tantivy.Query.term_query(schema, 'site', q.site)
      clauses.append((_MUST, tantivy.Query.const_score_query(site, 0.0)))
    return tantivy.Query.boolean_query(clauses)

  def _search(self, searcher, query, limit: int) -> list[str]:
    if query is None or limit <= 0:
      return []
    hits = searcher.search(query, limit=limit, count=False).hits
    ords = searcher.fast_field_values('doc_ord', [a for _, a in hits])
    return [self._doc_ids[o] for o in ords]

  def _passage_parents(self, query, k: int) -> list[str]:
    limit = k * _PASSAGE_OVERFETCH
    while True:
      ranked = self._search(self._passage_searcher, query, limit)
      parents = list(dict.fromkeys(ranked))
      if len(parents) >= k or len(ranked) < limit:
        return parents[:k]
      limit *= 4

  def rank_view(self, q: ParsedQuery, view: str, k: int) -> list[str]:
    """Up to k doc_ids best first in one view (see `view_rankings`)."""
    if view == 'doc':
      query = self._query(self._doc_schema, 'text', q)
      return self._search(self._doc_searcher, query, k)
    if view == 'title':
      query = self._query(self._doc_schema, 'title', q)
      return self._search(self._doc_searcher, query, k)
    if view == 'passage':
      query = self._query(self._passage_schema, 'text', q)
      return self._passage_parents(query, k)
    raise ValueError(f'unknown view {view!r}; views are {VIEWS}')

  def _rank_one(self, q: ParsedQuery, k: int) -> dict[str, list[str]]:
    return {view: self.rank_view(q, view, k) for view in VIEWS}

  def _rank_one_parallel(self, q: ParsedQuery, k: int) -> dict[str, list[str]]:
    """As `_rank_one`; the passage view (the slowest) on the view pool."""
    passage = self._view_pool.submit(self.rank_view, q, 'passage', k)
    out = {v: self.rank_view(q, v, k) for v in VIEWS if v != 'passage'}
    out['passage'] = passage.result()
    return {v: out[v] for v in VIEWS}

  def _rank_single(self, q: ParsedQuery, k: int) -> dict[str, list[str]]:
    if self._view_pool is None:
      return self._rank_one(q, k)
    with self._lock:
      self._in_flight += 1
      spare_core = self._in_flight < self._cores
    try:
      if spare_core:
        return self._rank_one_parallel(q, k)
      return self._rank_one(q, k)
    finally:
      with self._lock:
        self._in_flight -= 1

  def view_rankings(
      self, queries: Sequence[ParsedQuery], k: int
  ) -> list[dict[str, list[str]]]:
    """Per query, per view, up to k doc_ids best first (see SearchBackend)."""
    if k < 1:
      raise ValueError(f'k must be >= 1, got {k}')
    try:
      if len(queries) == 1:
        return [self._rank_single(queries[0], k)]
      return list(self._pool.map(lambda q: self._rank_one(q, k), queries))
    except ValueError as e:
      raise BackendError(f'tantivy search failed: {e}') from e

  def get_documents(self, doc_ids: Sequence[str]) -> list[Document | None]:
    """Stored documents in input order; None for unknown doc_ids."""
    wanted = list(dict.fromkeys(doc_ids))
    if not wanted:
      return []
    schema, searcher = self._doc_schema, self._doc_searcher
    query = tantivy.Query.boolean_query(
        [
            (_SHOULD, tantivy.Query.term_query(schema, 'doc_id', d))
            for d in wanted
        ]
    )
    found = {}
    for _, addr in searcher.search(query, limit=len(wanted), count=False).hits:
      fields = searcher.doc(addr).to_dict()
      doc = Document(
          doc_id=fields['doc_id'][0],
          title=fields.get('title', [''])[0],
          url=fields.get('url', [''])[0],
          text=fields.get('text', [''])[0],
          links=tuple(fields.get('links', ())),
      )
      found[doc.doc_id] = doc
    return [found.get(d) for d in doc_ids]

  def num_documents(self) -> int:
    return self._doc_searcher.num_docs

  def term_idf(self, terms: Sequence[str]) -> dict[str, float]:
    """BM25 idf of index terms in the doc view (for snippet scoring)."""
    n = self._doc_searcher.num_docs
    out = {}
    for t in terms:
      df = self._doc_searcher.doc_freq('text', t)
      out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out

  @property
  def analyzer(self) -> QueryAnalyzer:
    """The query analyzer matching this index's analysis."""
    return self._analyzer

  def close(self) -> None:
    self._pool.shutdown(wait=True)
    if self._view_pool is not None:
      self._view_pool.shutdown(wait=True)


def tantivy_engine(
    index_dir: str | pathlib.Path,
    config: EngineConfig = EngineConfig(),
    guard: LeakageGuard | None = None,
    threads: int = 2,
    *,
    parallel_views: bool = True,
) -> SearchEngine:
  """A SearchEngine over a tantivy index, with matching snippet analysis
  and corpus idf. The caller closes it."""
  backend = TantivyBackend(
      index_dir, threads=threads, parallel_views=parallel_views
  )
  return SearchEngine(
      backend,
      config,
      guard,
      analyzer=backend.analyzer,
      idf=backend.term_idf,
  )
