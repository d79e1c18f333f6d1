"""RoleLLM (budget, stops, counters) and chat_parsed (re-asks, give-ups)."""

import asyncio
import json

import httpx
import pytest

from search_agent.llm import openai_client
from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm import role_client
from search_agent.llm import scripted
from search_agent.rewards import judging
from search_agent.synthesis import cache as cache_lib


def _parse(text: str) -> dict:
  return judging.parse_json_reply(text, 'm')


def _ask(llm, params=protocol.SamplingParams(temperature=0.0, seed=3)):
  messages = [{'role': 'user', 'content': 'q'}]
  return asyncio.run(role_client.chat_parsed(llm, messages, params, _parse))


def test_unparsable_reply_is_reasked_and_counted():
  inner = scripted.ScriptedLLM(['no json', 'still none', '{"ok": true}'])
  llm = role_client.RoleLLM(inner, 'judge', parse_retries=2)
  assert _ask(llm) == {'ok': True}
  s = llm.stats
  assert (s.calls, s.parse_failures, s.parse_retries, s.parse_errors) == (
      3, 2, 2, 0,
  )  # fmt: skip


def test_reask_samples_at_retry_temperature_with_a_new_seed():
  seen = []

  class Recorder:
    name = 'r'

    async def chat(self, messages, params):
      seen.append(params)
      return [protocol.Completion(text='x' if len(seen) < 2 else '{}')]

  llm = role_client.RoleLLM(Recorder(), 'critic', retry_temperature=0.5)
  _ask(llm)
  assert seen[0].temperature == 0.0 and seen[0].seed == 3
  assert seen[1].temperature == 0.5 and seen[1].seed != 3


def test_no_parsable_reply_raises_never_a_default():
  llm = role_client.RoleLLM(
      scripted.ScriptedLLM(lambda m: 'yes'), 'judge', parse_retries=1
  )
  with pytest.raises(judging.JudgeReplyError, match="role 'judge'.*2 attempt"):
    _ask(llm)
  assert llm.stats.parse_errors == 1 and llm.stats.parse_failures == 2


def test_budget_caps_and_stops_are_added():
  seen = []

  class Recorder:
    name = 'r'

    async def chat(self, messages, params):
      seen.append(params)
      return [protocol.Completion(text='{}', finish_reason='length')]

  llm = role_client.RoleLLM(Recorder(), 'x', max_tokens=32, stop=('</a>',))
  _ask(llm, protocol.SamplingParams(max_tokens=4096, stop=('\n\n',)))
  assert seen[0].max_tokens == 32 and seen[0].stop == ('\n\n', '</a>')
  assert llm.stats.length_finishes == 1
  _ask(llm, protocol.SamplingParams(max_tokens=8))
  assert seen[1].max_tokens == 8


def test_failed_call_is_counted_and_raised():
  llm = role_client.RoleLLM(
      scripted.ScriptedLLM([protocol.LLMError('down')]), 'x'
  )
  with pytest.raises(protocol.LLMError, match='down'):
    _ask(llm)
  assert llm.stats.failed_calls == 1 and llm.stats.parse_failures == 0


def test_vote_failure_fails_the_judgment_and_counts():
  replies = iter(['{"established": [1]}', 'garbage'] + ['garbage'] * 10)
  llm = role_client.RoleLLM(
      scripted.ScriptedLLM(lambda m: next(replies)), 'claim_judge',
      parse_retries=1,
  )  # fmt: skip
  with pytest.raises(judging.JudgeReplyError):
    asyncio.run(
        judging.sample_json(
            llm, 'p', 3, judging.JudgeSampling(),
            lambda r: judging.index_list(r, 'established', 2, 'j'),
        )
    )  # fmt: skip
  assert llm.stats.parse_errors >= 1


def test_schema_check_failure_is_reasked():
  replies = iter(['{"established": [9]}', '{"established": [2]}'])
  llm = role_client.RoleLLM(
      scripted.ScriptedLLM(lambda m: next(replies)), 'claim_judge'
  )
  (reply,) = asyncio.run(
      judging.sample_json(
          llm, 'p', 1, judging.JudgeSampling(),
          lambda r: judging.index_list(r, 'established', 2, 'j'),
      )
  )  # fmt: skip
  assert reply == {'established': [2]} and llm.stats.parse_retries == 1


def test_registry_builds_a_role_with_its_settings():
  config = registry.from_dict({
      'kind': 'scripted', 'script': ['{}'], 'max_tokens': 64,
      'stop': ['', '</x>'], 'parse_retries': 0,
  })  # fmt: skip
  llm = registry.build_role(config, 'critic')
  assert (llm.role, llm.max_tokens, llm.stop, llm.parse_retries) == (
      'critic', 64, ('</x>',), 0,
  )  # fmt: skip
  assert config.manifest()['max_tokens'] == 64
  with pytest.raises(registry.LLMConfigError):
    registry.from_dict({'kind': 'scripted', 'script': ['x'], 'max_tokens': -1})


def test_report_reads_the_http_client_and_cache(tmp_path):
  calls = []

  def handler(request):
    calls.append(1)
    if len(calls) == 1:
      return httpx.Response(503, text='busy')
    body = {'choices': [{'index': 0, 'message': {'content': '{"a": 1}'},
                         'finish_reason': 'stop'}]}  # fmt: skip
    return httpx.Response(200, text=json.dumps(body))

  client = openai_client.OpenAIClient(
      openai_client.OpenAIConfig(
          base_url='http://x/v1', model='m', backoff_s=0.0, max_backoff_s=0.0
      ),
      transport=httpx.MockTransport(handler),
  )
  llm = role_client.RoleLLM(cache_lib.CachedLLM(client, tmp_path), 'judge')
  assert _ask(llm) == {'a': 1}
  assert _ask(llm) == {'a': 1}
  r = llm.report()
  assert (r['calls'], r['cache_hits'], r['http_requests']) == (2, 1, 1)
  assert (r['http_attempts'], r['http_retries'], r['http_failures']) == (
      2, 1, 0,
  )  # fmt: skip
