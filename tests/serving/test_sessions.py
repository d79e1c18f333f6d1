"""Finished trajectories release their sessions; pushes recompute the rest."""

import asyncio

import httpx
import jax
import pytest

from search_agent.llm import protocol
from search_agent.llm import server_client
from search_agent.train.rl import server_policy
from search_agent.train.rl import weight_sync

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def _chat(content: str) -> list[protocol.Message]:
  return [{'role': 'user', 'content': content}]


def test_release_then_push_recomputes_live_sessions_only(server, tmp_path):
  url, served = server
  engine = served.engine
  store = weight_sync.WeightStore(tmp_path / 'weights')
  sync = server_policy.ServerWeightSync(store, [url])
  llm = server_policy.SyncedServerLLM(
      server_client.ServerLLM(
          server_client.ServerConfig(base_urls=(url,)), served.prompts
      ),
      sync,
  )
  params = protocol.SamplingParams(temperature=0.0, max_tokens=4)
  store.publish(engine.params, 0)

  async def go():
    (a,) = await llm.chat(_chat('First trajectory.'), params)
    (b,) = await llm.chat(_chat('Second trajectory, still running.'), params)
    released = await llm.release([a])
    return a, b, released

  a, b, released = asyncio.run(go())
  assert released == 1
  sessions = {s.session: s for s in engine.slots if s.ctx}
  (sid_b,) = [sid for sid, s in llm.llm._sessions.items()]
  assert sid_b in sessions and len(sessions) >= 1
  assert all(s.tokens != a.prompt_token_ids + a.token_ids
             for s in llm.llm._sessions.values())  # fmt: skip
  live = sum(len(s.ctx) for s in engine.slots if s.ctx and s.session)
  assert httpx.get(url + '/metrics').json()['released_sessions'] >= 1

  original = engine.params
  store.publish(jax.tree.map(lambda x: x * 1.25, original), 1)
  try:
    _check_push(url, engine, llm, sync, b, params, live, sessions[sid_b])
  finally:  # the package's server serves version 0 to the other tests
    engine.update_weights(original, version=0, abort=False)


def _check_push(url, engine, llm, sync, b, params, live, slot_b):
  assert sync.refresh() == 1
  # Only sessions still cached were recomputed: b's (and other tests'
  # live sessions), never a's and never an anonymous prefix.
  assert sync.recomputed_tokens[1] == live > 0
  assert len(slot_b.ctx) <= live
  m = httpx.get(url + '/metrics').json()
  assert m['last_push_recomputed_tokens'] == live
  assert not [s for s in engine.slots if s.ctx and s.session is None]
  assert llm.session_counters() == {
      'push_recomputed_tokens': sync.recomputed_tokens[0] + live,
      'released_sessions': 1,
  }
  # The next turn of b continues on the recomputed KV under version 1.
  turn = _chat('Second trajectory, still running.') + [
      {'role': 'assistant', 'content': '',
       protocol.SAMPLED_TOKEN_IDS: list(b.token_ids)},
      {'role': 'user', 'content': 'more'},
  ]  # fmt: skip
  (c,) = asyncio.run(llm.chat(turn, params))
  assert c.policy_version == 1
