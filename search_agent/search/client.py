"""Async access to a search engine, in process or over HTTP, one interface.

Both `LocalSearch` (wraps an in-process `SearchEngine`, running its blocking
calls in a thread pool) and `HttpSearch` (talks to `index.serve`) offer:

  * `await search(queries, k) -> list[QueryResult]` — one result per query,
    in order; a malformed query gets `QueryResult.error` (the parser's
    message) while the other queries of the batch are answered;
  * `await get_documents(doc_ids) -> list[Document | None]`;
  * `await aclose()`.

Failures of the service itself (unreachable, 5xx, a malformed reply, a
backend error) raise `SearchServiceError`; `HttpSearch` first retries
transport errors and 502/503/504 with exponential backoff.
"""

import asyncio
import dataclasses
from typing import Any, Protocol, Sequence

import httpx

from search_agent.corpus.record import Document
from search_agent.search import parser
from search_agent.search.backend import BackendError
from search_agent.search.engine import Hit
from search_agent.search.engine import SearchEngine

_TRANSIENT = (502, 503, 504)


class SearchServiceError(RuntimeError):
  """The search service failed (not the caller's query)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class QueryResult:
  """The answer to one query of a batch.

  Attributes:
    query: The query as sent.
    hits: Ranked hits (empty when error is set).
    error: Why the query was rejected (malformed query), else None.
  """

  query: str
  hits: tuple[Hit, ...] = ()
  error: str | None = None

  def to_json(self) -> dict[str, Any]:
    return {
        'query': self.query,
        'hits': [dataclasses.asdict(h) for h in self.hits],
        'error': self.error,
    }

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'QueryResult':
    return cls(
        query=obj['query'],
        hits=tuple(Hit(**h) for h in obj['hits']),
        error=obj['error'],
    )


class SearchService(Protocol):
  """What the toolbox needs from a search engine."""

  async def search(self, queries: Sequence[str], k: int) -> list[QueryResult]:
    ...

  async def get_documents(
      self, doc_ids: Sequence[str]
  ) -> list[Document | None]:
    ...

  async def aclose(self) -> None:
    ...


def search_batch(
    engine: SearchEngine, queries: Sequence[str], k: int
) -> list[QueryResult]:
  """Blocking batched search with per-query errors (a malformed query gets
  its parser message; the valid ones are searched in one batch).

  Raises:
    SearchServiceError: if the backend fails.
  """
  try:
    answers = engine.search_or_errors(queries, k)
  except BackendError as e:
    raise SearchServiceError(f'search failed: {type(e).__name__}: {e}') from e
  return [
      QueryResult(query=q, error=str(a))
      if isinstance(a, parser.QueryError)
      else QueryResult(query=q, hits=tuple(a))
      for q, a in zip(queries, answers)
  ]


class LocalSearch:
  """An in-process SearchEngine behind the async interface."""

  def __init__(self, engine: SearchEngine):
    self.engine = engine

  async def search(self, queries: Sequence[str], k: int) -> list[QueryResult]:
    return await asyncio.to_thread(search_batch, self.engine, queries, k)

  async def get_documents(
      self, doc_ids: Sequence[str]
  ) -> list[Document | None]:
    try:
      return await asyncio.to_thread(self.engine.get_documents, doc_ids)
    except BackendError as e:
      raise SearchServiceError(
          f'get_documents failed: {type(e).__name__}: {e}'
      ) from e

  async def aclose(self) -> None:
    pass


class HttpSearch:
  """Client of the HTTP search service (`index.serve`)."""

  def __init__(
      self,
      base_url: str,
      *,
      timeout_s: float = 30.0,
      retries: int = 2,
      backoff_s: float = 0.5,
      transport: httpx.AsyncBaseTransport | None = None,
  ):
    """Creates a client.

    Args:
      base_url: E.g. 'http://127.0.0.1:8080'.
      timeout_s: Per-request timeout.
      retries: Extra attempts after a transport error or a 502/503/504
        (the service restarting or overloaded); a 4xx is never retried.
      backoff_s: Wait before the first retry; doubles each retry.
      transport: Optional httpx transport (e.g. httpx.ASGITransport(app) to
        talk to an app in process).
    """
    self._http = httpx.AsyncClient(
        base_url=base_url, timeout=timeout_s, transport=transport
    )
    self._retries = retries
    self._backoff_s = backoff_s

  async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(self._retries + 1):
      last = attempt == self._retries
      try:
        resp = await self._http.post(path, json=body)
      except httpx.HTTPError as e:
        if last:
          raise SearchServiceError(
              f'search service at {self._http.base_url} unreachable after'
              f' {attempt + 1} attempt(s): {type(e).__name__}: {e}'
          ) from e
      else:
        if resp.status_code not in _TRANSIENT or last:
          break
      await asyncio.sleep(self._backoff_s * 2**attempt)
    if resp.status_code != 200:
      raise SearchServiceError(
          f'search service answered {resp.status_code} to {path}:'
          f' {resp.text[:300]}'
      )
    try:
      return resp.json()
    except ValueError as e:
      raise SearchServiceError(f'{path} reply is not JSON: {e}') from e

  async def search(self, queries: Sequence[str], k: int) -> list[QueryResult]:
    reply = await self._post('/search', {'queries': list(queries), 'k': k})
    try:
      results = [QueryResult.from_json(r) for r in reply['results']]
    except (KeyError, TypeError) as e:
      raise SearchServiceError(f'malformed /search reply: {e!r}') from e
    if len(results) != len(queries):
      raise SearchServiceError(
          f'/search answered {len(results)} results for {len(queries)}'
          ' queries'
      )
    return results

  async def get_documents(
      self, doc_ids: Sequence[str]
  ) -> list[Document | None]:
    reply = await self._post('/documents', {'doc_ids': list(doc_ids)})
    try:
      docs = [
          None if d is None else Document.from_json(d)
          for d in reply['documents']
      ]
    except (KeyError, TypeError, ValueError) as e:
      raise SearchServiceError(f'malformed /documents reply: {e!r}') from e
    if len(docs) != len(doc_ids):
      raise SearchServiceError(
          f'/documents answered {len(docs)} documents for {len(doc_ids)} ids'
      )
    return docs

  async def aclose(self) -> None:
    await self._http.aclose()


def as_service(search: Any) -> SearchService:
  """A SearchEngine wrapped in LocalSearch; a service returned as is."""
  if isinstance(search, SearchEngine):
    return LocalSearch(search)
  if all(hasattr(search, m) for m in ('search', 'get_documents', 'aclose')):
    return search
  raise TypeError(
      f'expected a SearchEngine or a search service, got {type(search)}'
  )
