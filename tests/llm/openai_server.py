"""A real local OpenAI-compatible HTTP server with scripted replies (tests)."""

import asyncio
import contextlib
import json
import socket
import threading
import time
from typing import Any, Callable, Iterator

import fastapi
from fastapi import responses
import uvicorn

# A behaviour takes the request body and returns (status, body or text); a
# float first element means "sleep that many seconds, then reply 200 ok".
Behaviour = Callable[[dict[str, Any]], tuple[Any, Any]]


def reply(
    text: str,
    *,
    token_ids: list[int] | None = None,
    logprobs: list[float] | None = None,
    prompt_token_ids: list[int] | None = None,
    finish_reason: str = 'stop',
    reasoning: str | None = None,
) -> dict[str, Any]:
  """A chat.completion body as vLLM returns it."""
  msg = {'role': 'assistant', 'content': text}
  if reasoning is not None:
    msg['reasoning_content'] = reasoning
  choice: dict[str, Any] = {
      'index': 0,
      'message': msg,
      'finish_reason': finish_reason,
  }
  if token_ids is not None:
    choice['token_ids'] = token_ids
  if logprobs is not None:
    choice['logprobs'] = {
        'content': [{'token': 'x', 'logprob': lp} for lp in logprobs]
    }
  body = {
      'id': 'cmpl-1',
      'object': 'chat.completion',
      'choices': [choice],
      'usage': {'prompt_tokens': 7, 'completion_tokens': len(text.split())},
  }
  if prompt_token_ids is not None:
    body['prompt_token_ids'] = prompt_token_ids
  return body


class ScriptedServer:
  """Serves /v1/chat/completions from a queue of behaviours.

  Attributes:
    requests: Every request body received, in order.
    base_url: 'http://127.0.0.1:<port>/v1'.
  """

  def __init__(self, behaviours: list[Behaviour] | Behaviour):
    self.requests: list[dict[str, Any]] = []
    self.headers: dict[str, str] = {}  # added to every non-200 reply
    self.in_flight = 0
    self.max_in_flight = 0
    self._behaviours = behaviours
    app = fastapi.FastAPI()
    app.post('/v1/chat/completions')(self._handle)
    self._sock = socket.socket()
    self._sock.bind(('127.0.0.1', 0))
    self.base_url = f'http://127.0.0.1:{self._sock.getsockname()[1]}/v1'
    config = uvicorn.Config(app, log_level='error', lifespan='off')
    self._server = uvicorn.Server(config)

  async def _handle(self, request: fastapi.Request):
    body = json.loads(await request.body())
    self.requests.append(body)
    if callable(self._behaviours):
      behaviour = self._behaviours
    else:
      behaviour = self._behaviours.pop(0)
    self.in_flight += 1
    self.max_in_flight = max(self.max_in_flight, self.in_flight)
    try:
      status, payload = behaviour(body)
      if isinstance(status, float):
        await asyncio.sleep(status)
        status = 200
    finally:
      self.in_flight -= 1
    headers = self.headers if status != 200 else None
    if isinstance(payload, str):
      return responses.PlainTextResponse(
          payload, status_code=status, headers=headers
      )
    return responses.JSONResponse(payload, status_code=status, headers=headers)

  @contextlib.contextmanager
  def running(self) -> Iterator['ScriptedServer']:
    thread = threading.Thread(
        target=self._server.run, kwargs={'sockets': [self._sock]}, daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not self._server.started:
      if time.monotonic() > deadline:
        raise RuntimeError('test server did not start within 10 s')
      time.sleep(0.01)
    try:
      yield self
    finally:
      self._server.should_exit = True
      thread.join(timeout=10)
