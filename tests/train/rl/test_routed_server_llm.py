"""Server-policy clients: routing of copied prefixes, OpenAI versions."""

import asyncio
import json

import httpx
import jax.numpy as jnp
import numpy as np

from search_agent.llm import protocol
from search_agent.llm import server_client
from search_agent.train.rl import server_policy
from search_agent.train.rl import weight_sync


class Prompts:
  stop_token_ids = (0,)

  def prompt_ids(self, messages):
    return tuple(int(t) for t in messages[0]['content'].split())

  def decode(self, ids):
    return ' '.join(map(str, ids))


def _routes(positions):
  return [[[p, p + 1]] for p in positions]  # [n, layers=1, top_k=2]


def test_copied_prefix_gets_the_finished_siblings_routing():
  replies = []

  def handler(request):
    body = json.loads(request.content)
    ids = body['input_ids']
    if len(replies) == 0:  # the donor: computed every position itself
      out = {'routed_experts': _routes(range(len(ids) + 1)), 'routed_from': 0}
    else:  # its prefix was copied from the donor's still-running slot
      out = {'routed_experts': _routes(range(3, len(ids) + 1)),
             'routed_from': 3}  # fmt: skip
    replies.append(body['session_id'])
    return httpx.Response(
        200,
        json={'token_ids': [9, 0], 'logprobs': [-1.0, -2.0],
              'versions': [4, 4], 'finish_reason': 'stop', **out},
    )  # fmt: skip

  llm = server_policy.RoutedServerLLM(
      server_client.ServerConfig(base_urls=('http://s',), routed_experts=True),
      Prompts(),
      transport=httpx.MockTransport(handler),
      wait_s=1.0,
  )
  params = protocol.SamplingParams(temperature=1.0, max_tokens=2, seed=0)

  async def both():
    msgs = lambda q: [{'role': 'user', 'content': f'1 2 3 {q}'}]
    (a,) = await llm.chat(msgs(5), params)
    (b,) = await llm.chat(msgs(6), params)  # a new session (not a prefix)
    return a, b

  a, b = asyncio.run(both())
  assert len(set(replies)) == 2
  # Prompt 4 tokens + 2 generated: routing of 5 positions, all present.
  for c in (a, b):
    np.testing.assert_array_equal(
        np.asarray(c.routed_experts)[:, 0, 0], np.arange(5)
    )
  assert llm.spliced_routes == 1


def test_openai_completions_get_the_stores_version(tmp_path):
  store = weight_sync.WeightStore(tmp_path)

  class Endpoint:
    name = 'endpoint'

    async def chat(self, messages, params):
      del messages, params
      return [protocol.Completion(text='x', finish_reason='stop')]

  llm = server_policy.StampedLLM(Endpoint(), store)
  params = protocol.SamplingParams(max_tokens=2)
  (c,) = asyncio.run(llm.chat([], params))
  assert c.policy_version is None  # nothing published yet
  store.publish({'w': jnp.zeros(2)}, 3)
  (c,) = asyncio.run(llm.chat([], params))
  assert c.policy_version == 3
