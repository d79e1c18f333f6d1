"""The rollout server's HTTP API (FastAPI) over the engine.

Token level (for rollout workers and the learner):
  * `POST /generate {input_ids, sampling: {temperature, top_p,
    max_new_tokens, stop_token_ids, stop_strings, seed}, session_id?,
    request_id?, return_routed_experts?}` → `{request_id, token_ids,
    logprobs, versions, finish_reason (stop | length | abort),
    cached_tokens, routed_experts?, routed_from?}`.
  * `POST /update_weights {path, version, step?, abort_in_flight?}` → loads
    the params of an orbax checkpoint dir, swaps them between decode steps,
    recomputes cached sessions → `{version, recomputed_tokens, step}`.
    A bad path is a 400 and another model's checkpoint a 409; the old
    weights keep serving.
  * `POST /pause`, `POST /resume`, `POST /abort {request_ids | all: true}`
    (aborted requests reply with what they generated, finish_reason abort),
    `POST /release_session {session_id}`.
  * `GET /health`, `GET /metrics` (slots busy, queue depth, tokens/s,
    version, prefill counters).
OpenAI-compatible `/v1/chat/completions`, `/v1/completions`, `/v1/models`
are in openai_api.py. Bad input is a 4xx with a message (400 malformed,
404 unknown id, 409 duplicate id or checkpoint of another model, 413 body
too large, 429 with Retry-After when the queue is full); never a 5xx.
"""

import asyncio
from typing import Any

import fastapi
from fastapi import responses
import uvicorn

from search_agent.model import engine_types as T
from search_agent.serving import bodies
from search_agent.serving import build as build_lib
from search_agent.serving import openai_api

_STATUS = (
    (build_lib.MismatchError, 409),
    (T.UnknownIdError, 404),
    (T.DuplicateIdError, 409),
    (T.QueueFullError, 429),
    (T.EngineError, 400),
)


def status_of(e: T.EngineError) -> int:
  return next(code for kind, code in _STATUS if isinstance(e, kind))


async def run_request(engine, req: T.GenerateRequest) -> T.GenerateResult:
  """Submits to the engine and awaits the result on this event loop."""
  loop = asyncio.get_running_loop()
  fut = loop.create_future()

  def done(result):
    loop.call_soon_threadsafe(_settle, fut, result)

  engine.submit(req, done)
  return await fut


def _settle(fut, result):
  if fut.done():
    return
  if isinstance(result, BaseException):
    fut.set_exception(result)
  else:
    fut.set_result(result)


def create_app(
    served: build_lib.Served, max_body_bytes: int
) -> fastapi.FastAPI:
  """The FastAPI app; `served.engine` must be started."""
  app = fastapi.FastAPI(title='search_agent rollout server')
  engine = served.engine
  weights_lock = asyncio.Lock()

  @app.exception_handler(bodies.BadRequest)
  async def bad_request(_, exc: bodies.BadRequest):
    return responses.JSONResponse(
        {'error': {'message': exc.message, 'code': exc.status}}, exc.status
    )

  @app.exception_handler(T.EngineError)
  async def engine_error(_, exc: T.EngineError):
    code = status_of(exc)
    headers = {}
    if isinstance(exc, T.QueueFullError):
      headers['Retry-After'] = str(max(1, round(exc.retry_after_s)))
    return responses.JSONResponse(
        {'error': {'message': str(exc), 'code': code}}, code, headers=headers
    )

  async def body(request: fastapi.Request) -> dict[str, Any]:
    return bodies.parse_json(await request.body(), max_body_bytes)

  @app.get('/health')
  async def health():
    return {'status': 'ok', 'version': engine.version}

  @app.get('/metrics')
  async def metrics():
    return engine.metrics()

  @app.post('/generate')
  async def generate(request: fastapi.Request):
    obj = await body(request)
    req = bodies.generate_request(obj)
    routed = bodies.get(obj, 'return_routed_experts', bool, False)
    result = await run_request(engine, req)
    return bodies.generate_response(result, routed)

  @app.post('/abort')
  async def abort(request: fastapi.Request):
    obj = await body(request)
    bodies.check_fields(obj, ('request_ids', 'all'))
    if bodies.get(obj, 'all', bool, False):
      return {'aborted': engine.abort(None)}
    ids = bodies.get(obj, 'request_ids', 'strs', required=True)
    return {'aborted': engine.abort(ids)}

  @app.post('/pause')
  async def pause():
    await asyncio.to_thread(engine.pause)
    return {'paused': True}

  @app.post('/resume')
  async def resume():
    await asyncio.to_thread(engine.resume)
    return {'paused': False}

  @app.post('/release_session')
  async def release(request: fastapi.Request):
    obj = await body(request)
    bodies.check_fields(obj, ('session_id',))
    sid = bodies.get(obj, 'session_id', str, required=True)
    await asyncio.to_thread(engine.release, sid)
    return {'released': sid}

  @app.post('/update_weights')
  async def update_weights(request: fastapi.Request):
    obj = await body(request)
    bodies.check_fields(obj, ('path', 'version', 'step', 'abort_in_flight'))
    path = bodies.get(obj, 'path', str, required=True)
    version = bodies.get(obj, 'version', int, required=True)
    step = bodies.get(obj, 'step', int, -1)
    abort = bodies.get(obj, 'abort_in_flight', bool, True)
    async with weights_lock:
      params, loaded = await asyncio.to_thread(
          build_lib.load_weights, engine.core, path, step
      )
      info = await asyncio.to_thread(
          engine.update_weights, params, version, abort
      )
    return dict(info, step=loaded)

  openai_api.add_routes(app, served, body, run_request)
  return app


def make_server(
    served: build_lib.Served,
    *,
    host: str,
    port: int,
    log_level: str = 'warning',
    max_body_bytes: int = 64 * 2**20,
) -> uvicorn.Server:
  """A uvicorn server of the app (`.run()` serves)."""
  app = create_app(served, max_body_bytes)
  return uvicorn.Server(
      uvicorn.Config(app, host=host, port=port, log_level=log_level)
  )
