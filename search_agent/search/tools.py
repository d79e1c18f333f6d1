"""The agent's toolbox: search, visit, open, find over one search service.

A `Toolbox` serves one trajectory. Documents get ref_ids `r1, r2, ...` in the
order search first returns them; the same document keeps its ref_id for the
whole trajectory. `execute(call)` never raises for the agent's mistakes (an
unknown tool, bad arguments, an unknown ref_id, a cursor past the end, a
blocked URL): they come back as error observations. So does a search
service that failed after its client's retries (`SearchServiceError`: the
service unreachable, a timeout, a search that lost a shard with no replica
to serve it) when `service_errors='observe'` (the default): the agent sees
`Error: the search service failed (...)` naming the cause, the call is a
failed one (`ToolResult.error` set, `data['service_error']` True), and no
partial or stale list is ever shown; with 'raise' the `SearchServiceError`
propagates and the runner marks the rollout failed. Other infrastructure
failures (a summarizer or reranker that fails with `on_error='raise'`)
raise. The leakage guard (Iris) acts at three
points here: search results, documents read through visit/open/find, and
any argument that names a blocked URL from memory.

`ToolResult.error` is set when the call produced nothing usable (every query
or every ref_id failed); partial failures are reported in the text and in
`data` with `error` None.
"""

import asyncio
import dataclasses
from typing import Any, Sequence

from search_agent.chat.turns import ToolCall
from search_agent.corpus.record import Document
from search_agent.llm import protocol
from search_agent.search import client as client_lib
from search_agent.search import pages as pages_lib
from search_agent.search import reranker as reranker_lib
from search_agent.search import schemas
from search_agent.search import visit as visit_lib
from search_agent.search.guard import LeakageGuard


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolResult:
  """What one tool call returned.

  Attributes:
    text: The observation the model sees.
    error: What went wrong when the call produced nothing usable, else None.
    data: Structured results (per tool; see the `_search`, `_visit`, ...
      methods).
    urls: URLs of the documents the observation shows.
  """

  text: str
  error: str | None = None
  data: dict[str, Any] = dataclasses.field(default_factory=dict)
  urls: tuple[str, ...] = ()


SERVICE_ERRORS = ('observe', 'raise')


def service_error_result(error: client_lib.SearchServiceError) -> ToolResult:
  """The failed call's observation of a search service failure."""
  msg = (
      f'the search service failed ({error}); this call returned nothing.'
      ' It is not your query: call the tool again, or go on without it'
  )
  return ToolResult(
      text=f'Error: {msg}',
      error=f'SearchServiceError: {error}',
      data={'service_error': True},
  )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolboxConfig:
  """Which tools the agent gets and how they behave.

  Attributes:
    tools: Tool names offered, in schema order. The open recipe's agent uses
      ('search', 'visit'); SearchMaster's ('search', 'open', 'find').
    top_k: Results per search query.
    find_requires_open: find only searches documents already opened
      (SearchMaster: "find locates exact matches within opened documents").
    limits: Argument size limits.
    pages: Paging of open/find.
    visit: Page reading of visit.
    rerank: The LLM reranker (off by default).
    service_errors: What a `SearchServiceError` (raised by the search
      service after its retries) becomes: 'observe' (a failed call's error
      observation, the run goes on) or 'raise' (it propagates: the rollout
      is recorded as failed).
  """

  tools: tuple[str, ...] = ('search', 'visit')
  top_k: int = 10
  find_requires_open: bool = True
  limits: schemas.ToolLimits = schemas.ToolLimits()
  pages: pages_lib.PageConfig = pages_lib.PageConfig()
  visit: visit_lib.VisitConfig = visit_lib.VisitConfig()
  rerank: reranker_lib.RerankConfig = reranker_lib.RerankConfig()
  service_errors: str = 'observe'

  def __post_init__(self):
    schemas.tool_schemas(self.tools)  # raises for an unknown tool
    if self.service_errors not in SERVICE_ERRORS:
      raise ValueError(
          f'service_errors must be one of {SERVICE_ERRORS}, got'
          f' {self.service_errors!r}'
      )
    if self.top_k < 1:
      raise ValueError(f'top_k must be >= 1, got {self.top_k}')


@dataclasses.dataclass
class _Ref:
  doc_id: str
  title: str
  url: str
  doc: Document | None = None
  lines: tuple[str, ...] | None = None
  opened: bool = False


class Toolbox:
  """The tools of one trajectory (not shared between trajectories)."""

  def __init__(
      self,
      search: Any,
      *,
      config: ToolboxConfig = ToolboxConfig(),
      guard: LeakageGuard | None = None,
      summarizer: protocol.LLM | None = None,
      reranker_llm: protocol.LLM | None = None,
      context: str = '',
  ):
    """Creates a toolbox.

    Args:
      search: A SearchEngine (run in a thread pool) or an async search
        service (client.LocalSearch, client.HttpSearch).
      config: Tools and their config_lib.
      guard: Leakage guard applied to search results (again: a remote
        service may guard less) and to visit/open/find; default: the
        default blocked patterns.
      summarizer: Auxiliary LLM for visit; None → extractive readings.
      reranker_llm: LLM for reranking; required iff config.rerank.enabled.
      context: Research context for the reranker (e.g. the question).
    """
    self.config = config
    self.service = client_lib.as_service(search)
    self.guard = guard or LeakageGuard()
    analyzer = getattr(search, 'analyzer', None)  # a SearchEngine's
    self.reader = visit_lib.PageReader(
        summarizer, config.visit, visit_lib.bm25_windows(analyzer)
    )
    self.reranker = None
    if config.rerank.enabled:
      if reranker_llm is None:
        raise ValueError('rerank.enabled needs a reranker_llm')
      self.reranker = reranker_lib.LLMReranker(reranker_llm, config.rerank)
    self.context = context
    self._refs: dict[str, _Ref] = {}
    self._by_doc: dict[str, str] = {}

  def schemas(self) -> list[dict[str, Any]]:
    return schemas.tool_schemas(self.config.tools)

  def manifest(self) -> dict[str, Any]:
    """What a run manifest records about these tools: schemas, settings,
    the auxiliary models and the SHA-256 of the prompts they use."""
    prompts, models = {}, {}
    if self.reader.llm is not None:
      prompts[self.reader.prompt.name] = self.reader.prompt.sha256
      models['summarizer'] = self.reader.llm.name
    if self.reranker is not None:
      prompts[self.reranker.prompt.name] = self.reranker.prompt.sha256
      models['reranker'] = self.reranker.llm.name
    return {
        'schemas': self.schemas(),
        'config': dataclasses.asdict(self.config),
        'models': models,
        'prompts': prompts,
    }

  def ref_for(self, doc_id: str, title: str, url: str) -> str:
    """The stable ref_id of a document, assigned on first sight."""
    if doc_id not in self._by_doc:
      ref_id = f'r{len(self._refs) + 1}'
      self._by_doc[doc_id] = ref_id
      self._refs[ref_id] = _Ref(doc_id=doc_id, title=title, url=url)
    return self._by_doc[doc_id]

  async def execute(self, call: ToolCall) -> ToolResult:
    """Runs one tool call; agent mistakes become error observations."""
    if call.name not in self.config.tools:
      msg = (
          f'unknown tool {call.name!r}; available tools:'
          f' {", ".join(self.config.tools)}'
      )
      return ToolResult(text=f'Error: {msg}', error=msg)
    try:
      args = schemas.validate_arguments(
          call.name, call.arguments, self.config.limits
      )
    except schemas.ToolArgumentError as e:
      return ToolResult(text=f'Error: {e}', error=str(e))
    texts = [
        v if isinstance(v, str) else '\n'.join(v)
        for v in args.values()
        if isinstance(v, (str, tuple))
    ]
    blocked = self.guard.find_in_text('\n'.join(texts))
    if blocked:  # a URL written from memory (Iris: tool-manager guard)
      msg = f'the call names blocked URLs {blocked} (leakage guard)'
      return ToolResult(
          text=f'Error: {msg}', error=msg, data={'blocked_urls': blocked}
      )
    method = {
        'search': self._search,
        'visit': self._visit,
        'open': self._open,
        'find': self._find,
    }[call.name]
    try:
      return await method(**args)
    except client_lib.SearchServiceError as e:
      if self.config.service_errors == 'raise':
        raise
      return service_error_result(e)

  async def _search(self, query: Sequence[str]) -> ToolResult:
    k = self.config.top_k
    depth = max(k, self.config.rerank.max_candidates) if self.reranker else k
    results = await self.service.search(list(query), depth)
    blocks, data, urls, errors = [], [], [], []
    for res in results:
      hits, blocked = self.guard.filter(list(res.hits))
      rerank = None
      if self.reranker and not res.error:
        hits, rerank = await self.reranker.rerank(self.context, res.query, hits)
      rows = [
          {
              'ref_id': self.ref_for(h.doc_id, h.title, h.url),
              'doc_id': h.doc_id,
              'title': h.title,
              'url': h.url,
              'snippet': h.snippet,
          }
          for h in hits[:k]
      ]
      item = {
          'query': res.query,
          'results': rows,
          'error': res.error,
          'blocked': len(blocked),
      }
      if rerank is not None:
        item['rerank'] = {
            **dataclasses.asdict(rerank),
            'order': list(rerank.order),
        }
      data.append(item)
      urls.extend(r['url'] for r in rows)
      if res.error:
        errors.append(res.error)
      blocks.append(_format_results(res.query, rows, res.error))
    error = '; '.join(errors) if len(errors) == len(results) else None
    return ToolResult(
        text='\n\n'.join(blocks),
        error=error,
        data={'queries': data},
        urls=tuple(urls),
    )

  async def _documents(self, ref_ids: Sequence[str]) -> dict[str, str]:
    """Loads the documents of known refs; returns {ref_id: error}."""
    errors, wanted = {}, []
    for ref_id in ref_ids:
      ref = self._refs.get(ref_id)
      if ref is None:
        known = ', '.join(list(self._refs)[-5:]) or 'none yet: search first'
        errors[ref_id] = (
            f'unknown ref_id {ref_id!r}; use a ref_id returned by search'
            f' (latest: {known})'
        )
      elif self.guard.is_blocked(ref.url):
        errors[ref_id] = f'access to {ref.url} is blocked (leakage guard)'
      elif ref.doc is None:
        wanted.append(ref_id)
    if wanted:
      docs = await self.service.get_documents(
          [self._refs[r].doc_id for r in wanted]
      )
      for ref_id, doc in zip(wanted, docs):
        if doc is None:
          errors[ref_id] = f'the document of {ref_id} is no longer available'
        else:
          self._refs[ref_id].doc = doc
    return errors

  async def _visit(self, ref_id: Sequence[str], goal: str) -> ToolResult:
    ref_ids = list(dict.fromkeys(ref_id))
    errors = await self._documents(ref_ids)
    ok = [r for r in ref_ids if r not in errors]
    readings = await asyncio.gather(
        *(self.reader.read(self._refs[r].doc, goal) for r in ok)
    )
    by_ref = dict(zip(ok, readings))
    blocks, data = [], []
    for r in ref_ids:
      if r in errors:
        blocks.append(f'[{r}] Error: {errors[r]}')
        data.append({'ref_id': r, 'error': errors[r]})
        continue
      ref = self._refs[r]
      blocks.append(visit_lib.format_reading(r, ref.doc, by_ref[r]))
      data.append(
          {
              'ref_id': r,
              'doc_id': ref.doc_id,
              'url': ref.url,
              **dataclasses.asdict(by_ref[r]),
          }
      )
    return ToolResult(
        text='\n\n'.join(blocks),
        error='; '.join(errors.values()) if not ok else None,
        data={'goal': goal, 'documents': data},
        urls=tuple(self._refs[r].url for r in ok),
    )

  def _lines(self, ref: _Ref) -> tuple[str, ...]:
    if ref.lines is None:
      ref.lines = pages_lib.render_lines(ref.doc, self.config.pages.line_chars)
    return ref.lines

  async def _open(self, ref_id: str, cursor: int) -> ToolResult:
    errors = await self._documents([ref_id])
    if errors:
      return ToolResult(text=f'Error: {errors[ref_id]}', error=errors[ref_id])
    ref = self._refs[ref_id]
    try:
      page = pages_lib.get_page(
          self._lines(ref), cursor, self.config.pages.page_lines
      )
    except pages_lib.PageError as e:
      return ToolResult(text=f'Error: {e}', error=str(e))
    reopened = ref.opened
    ref.opened = True
    return ToolResult(
        text=pages_lib.format_page(ref_id, ref.doc, page),
        data={
            'ref_id': ref_id,
            'doc_id': ref.doc_id,
            'cursor': cursor,
            'num_pages': page.num_pages,
            'reopened': reopened,
        },
        urls=(ref.url,),
    )

  async def _find(self, ref_id: str, pattern: str) -> ToolResult:
    ref = self._refs.get(ref_id)
    if ref and self.config.find_requires_open and not ref.opened:
      msg = f'{ref_id} is not open; call open(ref_id="{ref_id}") first'
      return ToolResult(text=f'Error: {msg}', error=msg)
    errors = await self._documents([ref_id])
    if errors:
      return ToolResult(text=f'Error: {errors[ref_id]}', error=errors[ref_id])
    ref = self._refs[ref_id]
    cfg = self.config.pages
    matches = pages_lib.find_matches(self._lines(ref), pattern, cfg.page_lines)
    return ToolResult(
        text=pages_lib.format_matches(
            ref_id, pattern, matches, cfg.max_matches
        ),
        data={
            'ref_id': ref_id,
            'pattern': pattern,
            'matches': [dataclasses.asdict(m) for m in matches],
        },
        urls=(ref.url,),
    )


def _format_results(query: str, rows: list[dict], error: str | None) -> str:
  if error:
    return f'Search "{query}": Error: {error}'
  if not rows:
    return f'Search "{query}": no results.'
  lines = [f'Search "{query}": {len(rows)} result(s)']
  for row in rows:
    lines.append(
        f'[{row["ref_id"]}] {row["title"]}\nURL: {row["url"]}\n{row["snippet"]}'
    )
  return '\n\n'.join(lines)
