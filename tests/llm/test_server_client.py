"""ServerLLM against a scripted /generate (httpx MockTransport, no model)."""

import asyncio
import json

import httpx
import pytest

from search_agent.llm import protocol
from search_agent.llm import server_client

STOP = 99


class Prompts:
  stop_token_ids = (STOP,)

  def __init__(self):
    self.next = (1, 2, 3)

  def prompt_ids(self, messages):
    if messages == 'bad':
      raise ValueError('no template')
    return self.next

  def decode(self, ids):
    return ' '.join(map(str, ids))


def _server(calls, replies=None):
  replies = list(replies or [])

  async def handle(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(0.01)  # requests overlap, as over a network
    body = json.loads(await request.aread())
    calls.append((str(request.url), body))
    if replies:
      return replies.pop(0)
    n = len(body['input_ids'])
    return httpx.Response(200, json={
        'token_ids': [7, 8, STOP], 'logprobs': [-1.0, -2.0, -0.5],
        'versions': [4, 4, 4], 'finish_reason': 'stop', 'cached_tokens': 0,
        'routed_experts': [[[0, 1]]] * (n + 2), 'routed_from': 0,
    })  # fmt: skip

  return httpx.MockTransport(handle)


def _llm(calls, replies=None, urls=('http://a', 'http://b'), **kw):
  cfg = server_client.ServerConfig(base_urls=urls, backoff_s=0.0, **kw)
  return server_client.ServerLLM(
      cfg, Prompts(), transport=_server(calls, replies)
  )


def test_completion_is_token_exact_and_turns_are_sticky():
  calls = []
  llm = _llm(calls, routed_experts=True)
  params = protocol.SamplingParams(max_tokens=3, seed=2, stop=('x',))

  async def go():
    (c1,) = await llm.chat([], params)
    llm.prompts.next = c1.prompt_token_ids + c1.token_ids + (5,)
    (c2,) = await llm.chat([], params)
    llm.prompts.next = (1, 2, 4)  # another trajectory
    (c3,) = await llm.chat([], params)
    return c1, c2, c3

  c1, c2, c3 = asyncio.run(go())
  assert c1.token_ids == (7, 8, STOP) and c1.text == '7 8'
  assert c1.logprobs == (-1.0, -2.0, -0.5) and c1.policy_version == 4
  assert c1.routed_experts.shape == (3 + 3 - 1, 1, 2)
  (u1, b1), (u2, b2), (u3, b3) = calls
  assert b1['sampling'] == {
      'temperature': 1.0, 'top_p': 1.0, 'max_new_tokens': 3,
      'stop_token_ids': [STOP], 'stop_strings': ['x'], 'seed': 2,
  }  # fmt: skip
  # The next turn of the trajectory: same session, same server.
  assert b2['session_id'] == b1['session_id'] and u2 == u1
  # A new trajectory: a new session on the least-loaded server.
  assert b3['session_id'] != b1['session_id']
  assert c2.prompt_token_ids == (1, 2, 3, 7, 8, STOP, 5)


def test_new_sessions_spread_over_servers():
  calls = []
  llm = _llm(calls)
  params = protocol.SamplingParams(max_tokens=3, n=4)
  asyncio.run(llm.chat([], params))
  urls = sorted(u.split('/generate')[0] for u, _ in calls)
  assert urls == ['http://a', 'http://a', 'http://b', 'http://b']
  assert sorted(b['sampling']['seed'] for _, b in calls) == [0, 1, 2, 3]


def test_errors_and_retries():
  calls = []
  busy = httpx.Response(429, headers={'retry-after': '0'}, text='queue full')
  llm = _llm(calls, [busy, httpx.Response(503)])
  asyncio.run(llm.chat([], protocol.SamplingParams(max_tokens=3)))
  assert len(calls) == 3
  long = httpx.Response(400, json={'error': {'message': 'prompt is too long'}})
  with pytest.raises(protocol.ContextLengthError):
    asyncio.run(_llm([], [long]).chat([], protocol.SamplingParams()))
  bad = httpx.Response(404, text='no')
  with pytest.raises(protocol.LLMError, match='404'):
    asyncio.run(_llm([], [bad]).chat([], protocol.SamplingParams()))
  with pytest.raises(protocol.LLMError, match='gave up'):
    asyncio.run(
        _llm([], [httpx.Response(500)] * 2, max_retries=1).chat(
            [], protocol.SamplingParams()
        )
    )
  with pytest.raises(protocol.LLMError, match='render'):
    asyncio.run(_llm([]).chat('bad', protocol.SamplingParams()))


def _release_server(calls, missing=()):
  """/generate as in _server; /release_session 404 for `missing` ids."""
  generate = _server(calls)

  async def handle(request: httpx.Request) -> httpx.Response:
    if request.url.path == '/release_session':
      sid = json.loads(await request.aread())['session_id']
      calls.append(('release', sid))
      return httpx.Response(404 if sid in missing else 200, json={})
    return await generate.handle_async_request(request)

  return httpx.MockTransport(handle)


def test_release_drops_every_session_of_a_finished_trajectory():
  calls = []
  cfg = server_client.ServerConfig(base_urls=('http://a',), backoff_s=0.0)
  llm = server_client.ServerLLM(
      cfg, Prompts(), transport=_release_server(calls)
  )
  params = protocol.SamplingParams(max_tokens=3)

  async def go():
    (c1,) = await llm.chat([], params)
    llm.prompts.next = c1.prompt_token_ids + c1.token_ids + (5,)
    (c2,) = await llm.chat([], params)  # the next turn: same session
    llm.prompts.next = (1, 9)  # the window slid: a new session
    (c3,) = await llm.chat([], params)
    llm.prompts.next = (4, 4)  # another trajectory, still running
    (other,) = await llm.chat([], params)
    return await llm.release([c1, c2, c3]), other

  released, other = asyncio.run(go())
  sids = [b['session_id'] for u, b in calls if u != 'release']
  assert sids[0] == sids[1] != sids[2] != sids[3]
  assert released == 2 and llm.released_sessions == 2
  assert sorted(s for u, s in calls if u == 'release') == sorted(sids[1:3])
  (left,) = llm._sessions.values()
  assert left.tokens == other.prompt_token_ids + other.token_ids


def test_forgotten_sessions_are_released_and_404_counts():
  calls = []
  cfg = server_client.ServerConfig(
      base_urls=('http://a',), backoff_s=0.0, max_sessions=1
  )
  llm = server_client.ServerLLM(cfg, Prompts(), transport=None)
  first_sid = []

  async def go():
    llm._transport = _release_server(calls, missing=first_sid)
    (c1,) = await llm.chat([], protocol.SamplingParams(max_tokens=3))
    first_sid.append(next(iter(llm._sessions)))
    llm.prompts.next = (4, 4)
    await llm.chat([], protocol.SamplingParams(max_tokens=3))
    return c1

  asyncio.run(go())
  # The first session fell out of memory: released (the server had evicted
  # it already: 404, which counts).
  assert [s for u, s in calls if u == 'release'] == first_sid
  assert llm.released_sessions == 1 and len(llm._sessions) == 1
