"""Agent rollouts through the server with the token-exact ServerLLM."""

import asyncio
import math
import pathlib

import httpx
import pytest

from search_agent.agent import budgets
from search_agent.agent import react
from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol
from search_agent.llm import server_client
from search_agent.search import schemas

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]


class NoTools:

  def schemas(self):
    return schemas.tool_schemas(('search',))

  async def execute(self, call):
    raise AssertionError(f'an untrained model made a valid call: {call}')


def _llm(url, routed=False):
  tok = tokenizer_lib.load_tokenizer(REPO / 'tests/chat/golden/tiny_tokenizer')
  cfg = server_client.ServerConfig(base_urls=(url,), routed_experts=routed)
  return server_client.ServerLLM(cfg, chat_prompts.RendererPrompts(tok)), tok


def test_react_rollouts_through_the_server(server):
  url, served = server
  llm, tok = _llm(url)
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=2, max_output_tokens=16, context_limit=1790,
          min_output_tokens=8,
      ),
      seed=1,
  )  # fmt: skip
  agent = react.ReActAgent(llm, config, counter=budgets.TokenizerCounter(tok))

  async def both():
    return await asyncio.gather(*(
        agent.run(
            traj_id=f't{i}', task_id=f't{i}', question=q, system_prompt='S',
            toolbox=NoTools(),
        )
        for i, q in enumerate(['Who was Lothair II?', 'Where is Tours?'])
    ))  # fmt: skip

  trajs = asyncio.run(both())
  for t in trajs:
    assert t.status == 'max_tokens'
    rec = t.tokens
    gen = [i for i, m in enumerate(rec.loss_mask) if m]
    assert len(gen) == 16 and t.meta['tokens_note'] == ''
    assert {rec.versions[i] for i in gen} == {served.engine.version}
    assert all(math.isfinite(rec.logprobs[i]) for i in gen)


def test_next_turn_reuses_the_session(server):
  url, _ = server
  llm, _ = _llm(url, routed=True)
  params = protocol.SamplingParams(temperature=1.0, max_tokens=8, seed=4)
  msgs = [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'Q?'}]

  async def turns():
    (c1,) = await llm.chat(msgs, params)
    # The next turn's prompt extends turn 1's prompt + generated ids (the
    # client sends it with turn 1's session id).
    before = httpx.get(url + '/metrics').json()
    prompt2 = c1.prompt_token_ids + c1.token_ids + (5, 6, 7)
    llm.prompts = _Fixed(llm.prompts, prompt2)
    (c2,) = await llm.chat(msgs, params)
    after = httpx.get(url + '/metrics').json()
    await llm.aclose()
    return c1, c2, before, after

  c1, c2, before, after = asyncio.run(turns())
  assert after['reused_tokens'] - before['reused_tokens'] == (
      len(c1.prompt_token_ids) + len(c1.token_ids) - 1
  )
  assert after['prefill_tokens'] == before['prefill_tokens']
  # Routing covers the whole prompt of turn 2 (turn 1's record + new).
  n = len(c2.prompt_token_ids) + len(c2.token_ids) - 1
  assert c2.routed_experts.shape[0] == n
  assert (
      c2.routed_experts[: len(c1.routed_experts)] == c1.routed_experts
  ).all()


class _Fixed:
  """A renderer returning fixed prompt ids (the next turn of a session)."""

  def __init__(self, inner, ids):
    self.inner, self.ids = inner, tuple(ids)
    self.stop_token_ids = inner.stop_token_ids

  def prompt_ids(self, messages):
    del messages
    return self.ids

  def decode(self, ids):
    return self.inner.decode(ids)
