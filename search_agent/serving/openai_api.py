"""OpenAI-compatible endpoints over the engine (with the project's template).

  * `POST /v1/chat/completions`: messages rendered by the one renderer
    (chat/chat_prompts.py, generation prompt appended), generation stopped
    at the template's end-of-turn token; `logprobs: true` gives per-token
    logprobs, `top_logprobs: N` the N most likely tokens at each position
    (N at most the engine's `top_logprobs`, 0 in the served config: every
    decode step then pays a top-k over the vocabulary). `tools` and `tool_choice` ('auto', 'none') are OpenAI function
    calling (openai_tools.py): the reply's parsed `<tool_call>` blocks come
    back as `message.tool_calls`, finish_reason 'tool_calls'. Extensions:
    `choices[i].token_ids` (generated ids, the end-of-turn token included),
    top-level `prompt_token_ids`, and request fields `session_id`,
    `request_id`.
  * `POST /v1/completions`: `prompt` as text or token ids; `logprobs: N`
    gives the chosen tokens' logprobs and the N most likely tokens at each
    position (N at most the engine's `top_logprobs`); `echo: true` puts the
    prompt's text before the completion (not with logprobs).
  * `GET /v1/models`.
Fields the engine cannot honour are a 400 naming them, never ignored:
more alternatives than the engine computes, `tool_choice` 'required' or a
named function, `echo` with logprobs, `stream`, non-zero penalties.
Stop strings end the generation and stay in the text (the llm protocol's
convention). `n` samples use seeds seed, seed+1, ...
"""

import asyncio
import time
from typing import Any, Awaitable, Callable
import uuid

import fastapi

from search_agent.model import engine_types as T
from search_agent.serving import bodies
from search_agent.serving import openai_tools

_COMMON = (
    'model', 'temperature', 'top_p', 'max_tokens', 'max_completion_tokens',
    'n', 'stop', 'seed', 'logprobs', 'top_logprobs', 'stream', 'user',
    'session_id', 'request_id', 'frequency_penalty', 'presence_penalty',
    'return_token_ids',
)  # fmt: skip


def _sampling(obj: dict, stop_ids: tuple[int, ...]) -> dict[str, Any]:
  if bodies.get(obj, 'stream', bool, False):
    raise bodies.BadRequest(400, 'stream=true is not supported')
  for key in ('frequency_penalty', 'presence_penalty'):
    if bodies.get(obj, key, float, 0.0) != 0.0:
      raise bodies.BadRequest(400, f'{key} is not supported (must be 0)')
  stop = obj.get('stop')
  if isinstance(stop, str):
    stop = [stop]
  stop = bodies.get({'stop': stop}, 'stop', 'strs', [])
  max_tokens = bodies.get(obj, 'max_completion_tokens', int) or bodies.get(
      obj, 'max_tokens', int, 128
  )
  n = bodies.get(obj, 'n', int, 1)
  if not 1 <= n <= 64:
    raise bodies.BadRequest(400, f'n must be in [1, 64], got {n}')
  top = bodies.get(obj, 'top_logprobs', int, 0)
  if top and not bodies.get(obj, 'logprobs', bool, False):
    raise bodies.BadRequest(400, 'top_logprobs needs logprobs: true')
  return dict(
      top_logprobs=top,
      temperature=bodies.get(obj, 'temperature', float, 1.0),
      top_p=bodies.get(obj, 'top_p', float, 1.0),
      max_new_tokens=max_tokens,
      stop_token_ids=stop_ids,
      stop_strings=tuple(stop),
      seed=bodies.get(obj, 'seed', int, 0),
      session_id=bodies.get(obj, 'session_id', str),
      request_id=bodies.get(obj, 'request_id', str),
      n=n,
  )


def _alternatives(prompts, top) -> list[dict[str, Any]]:
  """A token's (id, logprob) alternatives as OpenAI chat entries."""
  return [
      {'token': (text := prompts.decode([t])), 'logprob': lp,
       'bytes': list(text.encode())}
      for t, lp in top
  ]  # fmt: skip


async def _run_n(engine, run, ids, kw) -> list[T.GenerateResult]:
  n = kw.pop('n')
  rid, sid = kw.pop('request_id'), kw.pop('session_id')
  reqs = [
      T.GenerateRequest(
          input_ids=tuple(ids),
          **dict(kw, seed=kw['seed'] + i),
          request_id=None if rid is None else (rid if n == 1 else f'{rid}-{i}'),
          session_id=None if sid is None else (sid if n == 1 else f'{sid}-{i}'),
      )
      for i in range(n)
  ]
  return await asyncio.gather(*(run(engine, r) for r in reqs))


def add_routes(
    app: fastapi.FastAPI,
    served,
    body: Callable[[fastapi.Request], Awaitable[dict]],
    run: Callable[..., Awaitable[T.GenerateResult]],
) -> None:
  """Adds the /v1 routes to `app`."""
  engine, prompts, name = served.engine, served.prompts, served.model_name
  stop_ids = tuple(prompts.stop_token_ids)

  def decode_body(ids) -> str:
    ids = list(ids)
    if ids and ids[-1] in stop_ids:
      ids = ids[:-1]
    return prompts.decode(ids)

  def usage(prompt_len, results):
    done = sum(len(r.token_ids) for r in results)
    return {
        'prompt_tokens': prompt_len,
        'completion_tokens': done,
        'total_tokens': prompt_len + done,
        'prompt_tokens_details': {
            'cached_tokens': max(r.cached_tokens for r in results)
        },
    }

  @app.get('/v1/models')
  async def models():
    return {
        'object': 'list',
        'data': [{'id': name, 'object': 'model', 'owned_by': 'search_agent'}],
    }

  @app.post('/v1/chat/completions')
  async def chat(request: fastapi.Request):
    obj = await body(request)
    bodies.check_fields(obj, _COMMON + ('messages', 'tools', 'tool_choice'))
    messages = obj.get('messages')
    if not isinstance(messages, list) or not messages:
      raise bodies.BadRequest(400, 'messages must be a non-empty list')
    for m in messages:
      if not isinstance(m, dict) or not isinstance(m.get('role'), str):
        raise bodies.BadRequest(400, f'bad message {bodies.clip(m)}')
      if not isinstance(m.get('content', ''), (str, type(None))):
        raise bodies.BadRequest(400, 'message content must be a string')
    kw = _sampling(obj, stop_ids)
    tools = openai_tools.requested_tools(obj)
    try:
      ids = prompts.prompt_ids(openai_tools.with_tools(messages, tools))
    except (ValueError, KeyError, TypeError) as e:
      raise bodies.BadRequest(400, f'cannot render the messages: {e}') from e
    want_lp = bodies.get(obj, 'logprobs', bool, False)
    results = await _run_n(engine, run, ids, kw)
    choices = []
    for i, r in enumerate(results):
      content, calls = openai_tools.reply(decode_body(r.token_ids), tools)
      choice = {
          'index': i,
          'message': {'role': 'assistant', 'content': content},
          'finish_reason': r.finish_reason,
          'token_ids': list(r.token_ids),
      }
      if calls:
        choice['message']['tool_calls'] = calls
        if r.finish_reason == 'stop':
          choice['finish_reason'] = 'tool_calls'
      if want_lp:
        tops = r.top_logprobs or [()] * len(r.token_ids)
        choice['logprobs'] = {'content': [
            dict(_alternatives(prompts, [(t, lp)])[0],
                 top_logprobs=_alternatives(prompts, top))
            for t, lp, top in zip(r.token_ids, r.logprobs, tops)
        ]}  # fmt: skip
      choices.append(choice)
    return {
        'id': f'chatcmpl-{uuid.uuid4().hex[:24]}',
        'object': 'chat.completion',
        'created': int(time.time()),
        'model': name,
        'choices': choices,
        'usage': usage(len(ids), results),
        'prompt_token_ids': list(ids),
        'policy_versions': [list(r.versions) for r in results],
    }

  @app.post('/v1/completions')
  async def completions(request: fastapi.Request):
    obj = await body(request)
    bodies.check_fields(obj, _COMMON + ('prompt', 'echo'))
    prompt = obj.get('prompt')
    if isinstance(prompt, str):
      ids = list(prompts.tokenizer.encode(prompt))
    elif (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
      ids = prompt
    else:
      raise bodies.BadRequest(
          400, f'prompt must be a string or a list of token ids, got'
          f' {bodies.clip(prompt)}'
      )  # fmt: skip
    lp = obj.get('logprobs')
    if lp is not None and (not isinstance(lp, int) or isinstance(lp, bool)):
      raise bodies.BadRequest(400, f'logprobs must be an int, got {lp!r:.40}')
    if lp is not None and not 0 <= lp <= engine.core.top_logprobs:
      raise bodies.BadRequest(
          400,
          f'logprobs {lp} not in [0, {engine.core.top_logprobs}] (the'
          " engine's top_logprobs: the alternatives it computes)",
      )
    echo = bodies.get(obj, 'echo', bool, False)
    if echo and lp is not None:
      raise bodies.BadRequest(
          400, 'echo with logprobs is not supported (no prompt logprobs)'
      )
    if bodies.get(obj, 'top_logprobs', int, 0):
      raise bodies.BadRequest(
          400, 'top_logprobs is a chat field; send logprobs: N here'
      )
    kw = _sampling(dict(obj, logprobs=None), ())
    kw['top_logprobs'] = lp or 0  # alternatives per token
    results = await _run_n(engine, run, ids, kw)  # checks the ids
    head = prompt if isinstance(prompt, str) else prompts.decode(ids)
    choices = []
    for i, r in enumerate(results):
      toks = [prompts.decode([t]) for t in r.token_ids]
      choice = {
          'index': i,
          'text': (head if echo else '') + prompts.decode(list(r.token_ids)),
          'finish_reason': r.finish_reason,
          'token_ids': list(r.token_ids),
          'logprobs': None,
      }
      if lp is not None:
        offsets = [sum(len(t) for t in toks[:j]) for j in range(len(toks))]
        choice['logprobs'] = {
            'tokens': toks,
            'token_logprobs': list(r.logprobs),
            'top_logprobs': [
                {prompts.decode([t]): x for t, x in top}
                for top in r.top_logprobs
            ]
            or None,
            'text_offset': offsets,
        }
      choices.append(choice)
    return {
        'id': f'cmpl-{uuid.uuid4().hex[:24]}',
        'object': 'text_completion',
        'created': int(time.time()),
        'model': name,
        'choices': choices,
        'usage': usage(len(ids), results),
        'prompt_token_ids': list(ids),
    }
