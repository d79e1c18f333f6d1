"""The HTTP search service (FastAPI): batched search and document fetch.

Endpoints (JSON):
  * `POST /search` `{"queries": [str, ...], "k": int}` →
    `{"results": [{"query", "hits": [{doc_id, title, url, snippet, score}],
    "error"}, ...]}` — one result per query, in order; a malformed query gets
    its parser message in `error` and the rest of the batch is answered.
  * `POST /documents` `{"doc_ids": [str, ...]}` →
    `{"documents": [{doc_id, title, url, text, links} | null, ...]}`.
  * `GET /health` → `{"status": "ok", "num_documents": int}`.

Requests are answered concurrently: handlers are async and the blocking
engine calls run in a thread pool bounded by `ServiceLimits.threads` (no
global lock; tantivy searches release the GIL). Bad input gets a 4xx with a
message: 400 for malformed JSON (or nesting over `max_json_depth`) or fields,
413 for a body or batch over the limits. A failing backend is a 503. Nothing
the caller sends can cause a 500. Messages echo at most `_ECHO_CHARS` of a
value; a client gone mid-body is one log line, not a traceback.
"""

import dataclasses
import itertools
import json
import pathlib
import re
from typing import Any

from absl import logging
import anyio
import fastapi
from fastapi import responses
from starlette import requests as starlette_requests
import uvicorn

from search_agent import paths
from search_agent.corpus.sources import CorpusSpec
from search_agent.search import client as client_lib
from search_agent.search import es_backend
from search_agent.search import lucene_index
from search_agent.search import tantivy_index
from search_agent.search import tuning
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import GuardConfig
from search_agent.search.guard import LeakageGuard
from search_agent.search.lucene_backend import DEFAULT_BM25
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.snippets import SnippetConfig
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServiceLimits:
  """Request limits of the service.

  Attributes:
    max_body_bytes: Largest request body.
    max_queries: Most queries in one /search request.
    max_k: Largest k.
    max_doc_ids: Most doc_ids in one /documents request.
    max_json_depth: Deepest nesting of `[`/`{` in a body, checked on the raw
      bytes before parsing (Python's parser recurses per level).
    threads: Blocking engine calls running at once (the thread pool size).
  """

  max_body_bytes: int = 1 << 20
  max_queries: int = 64
  max_k: int = 100
  max_doc_ids: int = 100
  max_json_depth: int = 32
  threads: int = 16


# A JSON string (escapes included), then the brackets left outside strings.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b'[]{}')


def json_depth(body: bytes) -> int:
  """Deepest `[`/`{` nesting of a JSON text, brackets in strings skipped.

  A linear scan of the raw bytes (no parser recursion), for rejecting a
  too-deep body before `json.loads` would hit the recursion limit.
  """
  brackets = _JSON_STRING.sub(b'', body).translate(None, _NOT_BRACKETS)
  steps = (1 if b in b'[{' else -1 for b in brackets)
  return max(itertools.accumulate(steps, initial=0))


_ECHO_CHARS = 40


def _clip(value: Any) -> str:
  """`value`'s repr, cut to `_ECHO_CHARS` (+ '…'), for error messages."""
  text = repr(value)
  return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS] + '…'


class _BadRequest(Exception):

  def __init__(self, status: int, message: str):
    super().__init__(message)
    self.status = status
    self.message = message


async def _read_json(
    request: fastapi.Request, limit: int, max_depth: int
) -> dict[str, Any]:
  declared = request.headers.get('content-length', '')
  if declared.isdigit() and int(declared) > limit:
    raise _BadRequest(413, f'request body over the limit of {limit} bytes')
  body = bytearray()
  try:
    async for chunk in request.stream():
      body.extend(chunk)
      if len(body) > limit:
        raise _BadRequest(413, f'request body over the limit of {limit} bytes')
  except starlette_requests.ClientDisconnect as e:
    logging.warning(
        'client disconnected after %d body bytes of %s %s',
        len(body),
        request.method,
        request.url.path,
    )
    raise _BadRequest(400, 'client disconnected before the body ended') from e
  depth = json_depth(bytes(body))
  if depth > max_depth:
    raise _BadRequest(
        400, f'request body nests {depth} deep, over the limit of {max_depth}'
    )
  try:
    obj = json.loads(body)
  except (ValueError, UnicodeDecodeError) as e:
    raise _BadRequest(400, f'request body is not valid JSON: {e}') from e
  if not isinstance(obj, dict):
    raise _BadRequest(400, 'request body must be a JSON object')
  return obj


def _string_list(obj, key: str, limit: int) -> list[str]:
  value = obj.get(key)
  if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
    raise _BadRequest(400, f'"{key}" must be a list of strings')
  if not value:
    raise _BadRequest(400, f'"{key}" must not be empty')
  if len(value) > limit:
    raise _BadRequest(
        413, f'"{key}" has {len(value)} items, over the limit of {limit}'
    )
  for v in value:
    try:
      v.encode('utf-8')
    except UnicodeEncodeError as e:  # JSON "\ud800": no Unicode text
      raise _BadRequest(
          400,
          f'an item of "{key}" holds an unpaired UTF-16 surrogate'
          f' ({v[e.start : e.end]!r}); send valid Unicode text',
      ) from e
  return value


def _check_fields(obj: dict[str, Any], allowed: tuple[str, ...]) -> None:
  extra = sorted(set(obj) - set(allowed))
  if extra:
    shown = ', '.join(_clip(k) for k in extra[:8])
    raise _BadRequest(
        400, f'unknown fields [{shown}]; allowed: {list(allowed)}'
    )


def create_app(engine: SearchEngine, limits: ServiceLimits) -> fastapi.FastAPI:
  """The service app over one engine (the caller owns and closes it)."""
  app = fastapi.FastAPI(title='search_agent search service')
  limiter = anyio.CapacityLimiter(limits.threads)

  async def blocking(fn, *args):
    try:
      return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)
    except client_lib.SearchServiceError as e:
      raise _BadRequest(503, f'search backend failed: {e}') from e
    except BackendError as e:  # named: the agent's tool error shows it
      raise _BadRequest(
          503, f'search backend failed: {type(e).__name__}: {e}'
      ) from e

  @app.exception_handler(_BadRequest)
  async def bad_request(_, exc: _BadRequest):
    return responses.JSONResponse({'error': exc.message}, exc.status)

  @app.get('/health')
  async def health():
    n = await blocking(engine.num_documents)
    return {'status': 'ok', 'num_documents': n}

  @app.post('/search')
  async def search(request: fastapi.Request):
    obj = await _read_json(
        request, limits.max_body_bytes, limits.max_json_depth
    )
    _check_fields(obj, ('queries', 'k'))
    queries = _string_list(obj, 'queries', limits.max_queries)
    k = obj.get('k', 10)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
      raise _BadRequest(400, f'"k" must be an integer >= 1, got {_clip(k)}')
    max_k = min(limits.max_k, engine.config.max_k)
    if k > max_k:
      raise _BadRequest(413, f'"k" is {_clip(k)}, over the limit of {max_k}')
    results = await blocking(client_lib.search_batch, engine, queries, k)
    return {'results': [r.to_json() for r in results]}

  @app.post('/documents')
  async def documents(request: fastapi.Request):
    obj = await _read_json(
        request, limits.max_body_bytes, limits.max_json_depth
    )
    _check_fields(obj, ('doc_ids',))
    doc_ids = _string_list(obj, 'doc_ids', limits.max_doc_ids)
    docs = await blocking(engine.get_documents, doc_ids)
    return {'documents': [d.to_json() if d else None for d in docs]}

  return app


def engine_config(c) -> EngineConfig:
  """EngineConfig from the `engine` section of tpu_configs/search/serve.py."""
  e = c.engine
  config = EngineConfig(
      rrf_k=e.rrf_k,
      weights=dict(e.weights),
      depth_factor=e.depth_factor,
      view_depth_factor=dict(e.get('view_depth_factor', {})),
      min_depth=e.min_depth,
      max_k=e.max_k,
      max_query_chars=e.max_query_chars,
      snippet=SnippetConfig(
          window_words=e.snippet_window_words, max_words=e.snippet_max_words
      ),
  )
  if e.get('fusion_file'):  # tuned by `index.calibrate --config.mode=tune`
    config = tuning.with_fusion(config, tuning.Fusion.read(e.fusion_file))
  return config


def engine_bm25(c) -> dict[str, tuple[float, float]] | None:
  """The tuned BM25 `{view: (k1, b)}` of the engine's fusion file (None:
  none there, the backend's own)."""
  e = getattr(c, 'engine', None)  # a config without one tunes nothing
  if e is None or not e.get('fusion_file'):
    return None
  bm25 = tuning.Fusion.read(e.fusion_file).bm25
  return None if bm25 is None else {v: tuple(kb) for v, kb in bm25.items()}


def _refuse_bm25(c) -> None:
  bm25 = engine_bm25(c)
  if bm25 is not None and any(
      kb != DEFAULT_BM25.get(v) for v, kb in bm25.items()
  ):
    raise ValueError(
        f'{c.engine.fusion_file} sets BM25 k1/b per view ({bm25}), which'
        f' only the lucene backend applies; serve it with'
        f" --config.backend=lucene or drop 'bm25' from the file"
        f' (backend {c.backend!r} scores with k1=1.2, b=0.75)'
    )


def open_engine(c, workdir: str | pathlib.Path) -> SearchEngine:
  """Opens the engine a serve/calibrate config names.

  A tantivy index is built first when `build_if_missing` and none exists.

  Raises:
    BackendError: if there is no usable index.
    ValueError: for an unknown backend.
  """
  guard = LeakageGuard(GuardConfig(blocked_patterns=tuple(c.blocked_patterns)))
  if c.backend != 'lucene':
    _refuse_bm25(c)
  if c.backend == 'tantivy':
    # tantivy reads local files: a gs:// index is refused clearly (it used
    # to become the local path gs:/...); copy it to a local disk first.
    index_dir = pathlib.Path(
        paths.require_local(
            c.index_dir or paths.join(workdir, 'index'),
            'the tantivy index',
            'tantivy opens its files locally; copy the index to a local disk'
            ' and set index_dir',
        )
    )
    built = (index_dir / tantivy_index.CONFIG_FILE).is_file()
    if not built and c.build_if_missing:
      logging.info('building %s from %s', index_dir, c.corpus.kind)
      build_tantivy_index(
          CorpusSpec(**c.corpus), index_dir, IndexBuildConfig(**c.build)
      )
    return tantivy_engine(
        index_dir, engine_config(c), guard, threads=c.backend_threads
    )
  if c.backend == 'lucene':
    index_dir = pathlib.Path(
        paths.require_local(
            c.index_dir or paths.join(workdir, 'index'),
            'the Lucene index',
            'Lucene opens its files locally; copy the index to a local disk'
            ' and set index_dir',
        )
    )
    built = (index_dir / lucene_index.CONFIG_FILE).is_file()
    if not built and c.build_if_missing:
      logging.info('building %s from %s (lucene)', index_dir, c.corpus.kind)
      lucene_index.build_lucene_index(
          CorpusSpec(**c.corpus), index_dir, IndexBuildConfig(**c.build)
      )
    return lucene_engine(
        index_dir, engine_config(c), guard, threads=c.backend_threads,
        bm25=engine_bm25(c),
    )  # fmt: skip
  if c.backend == 'opensearch':
    backend = es_backend.EsBackend(es_backend.es_index_config(c.opensearch))
    build = backend.build_config
    analyzer = QueryAnalyzer(
        stem=build.stem, remove_stopwords=build.remove_stopwords
    )
    return SearchEngine(
        backend,
        engine_config(c),
        guard,
        analyzer=analyzer,
        idf=backend.term_idf,  # corpus idf: tantivy's snippets
    )
  raise ValueError(
      "backend must be 'tantivy', 'lucene' or 'opensearch', got"
      f' {c.backend!r}'
  )


def make_server(
    engine: SearchEngine,
    limits: ServiceLimits,
    *,
    host: str = '127.0.0.1',
    port: int = 8080,
    log_level: str = 'warning',
) -> uvicorn.Server:
  """A uvicorn server of the app over `engine` (`.run()` serves)."""
  app = create_app(engine, limits)
  return uvicorn.Server(
      uvicorn.Config(app, host=host, port=port, log_level=log_level)
  )
