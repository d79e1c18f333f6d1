"""OpenAIClient against a real local HTTP server (uvicorn on 127.0.0.1)."""

import asyncio
import dataclasses
import importlib.util
import pathlib
import time

import httpx
import pytest

from search_agent.chat import toolcall
from search_agent.llm import openai_client
from search_agent.llm import protocol

_spec = importlib.util.spec_from_file_location(
    'openai_server', pathlib.Path(__file__).with_name('openai_server.py')
)
openai_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openai_server)

MESSAGES = [
    {'role': 'system', 'content': 'sys'},
    {'role': 'user', 'content': 'q?'},
    {'role': 'assistant', 'content': 'call', 'reasoning': 'hmm'},
    {'role': 'tool', 'content': 'obs', 'name': 'search'},
]
PARAMS = protocol.SamplingParams(temperature=0.5, max_tokens=64, seed=3)


def _client(server, **kw):
  cfg = dict(
      base_url=server.base_url,
      model='m',
      backoff_s=0.01,
      max_backoff_s=0.02,
      timeout_s=2.0,
  )
  cfg.update(kw)
  return openai_client.OpenAIClient(openai_client.OpenAIConfig(**cfg))


def _chat(client, messages=MESSAGES, params=PARAMS):
  async def go():
    try:
      return await client.chat(messages, params)
    finally:
      await client.aclose()

  return asyncio.run(go())


def test_tokens_logprobs_and_request_body():
  server = openai_server.ScriptedServer(
      [
          lambda b: (
              200,
              openai_server.reply(
                  '<answer>x</answer>',
                  token_ids=[5, 6, 7],
                  logprobs=[-0.1, -0.2, -0.3],
                  prompt_token_ids=[1, 2],
                  reasoning='thought',
              ),
          )
      ]
  )
  with server.running():
    client = _client(server, logprobs=True, return_token_ids=True)
    [c] = _chat(client)
  assert c.text == '<think>\nthought\n</think>\n\n<answer>x</answer>'
  assert c.token_ids == (5, 6, 7)
  assert c.logprobs == (-0.1, -0.2, -0.3)
  assert c.prompt_token_ids == (1, 2)
  assert c.prompt_tokens == 7
  body = server.requests[0]
  assert body['model'] == 'm' and body['seed'] == 3 and body['max_tokens'] == 64
  assert body['logprobs'] is True and body['return_token_ids'] is True
  assert body['messages'][2]['content'] == '<think>\nhmm\n</think>\n\ncall'
  assert body['messages'][3] == {'role': 'tool', 'content': 'obs'}
  assert client.attempts == 1


def test_retries_500_malformed_json_and_timeout_then_succeeds():
  server = openai_server.ScriptedServer(
      [
          lambda b: (500, 'boom'),
          lambda b: (200, 'this is not json'),
          lambda b: (200, {'choices': 'nope'}),
          lambda b: (1.5, openai_server.reply('late')),
          lambda b: (200, openai_server.reply('ok')),
      ]
  )
  with server.running():
    client = _client(server, timeout_s=0.5)
    [c] = _chat(client)
  assert c.text == 'ok'
  assert client.attempts == 5


def test_gives_up_with_clear_error_after_retries():
  server = openai_server.ScriptedServer(lambda b: (503, 'overloaded'))
  with server.running():
    client = _client(server, max_retries=2)
    with pytest.raises(protocol.LLMError, match='3 attempts.*503'):
      _chat(client)
  assert len(server.requests) == 3


def test_client_errors_are_not_retried_and_context_length_is_typed():
  server = openai_server.ScriptedServer(
      [
          lambda b: (
              400,
              {
                  'error': {
                      'message': "This model's maximum context"
                      ' length is 4096 tokens'
                  }
              },
          ),
          lambda b: (404, 'no such model'),
      ]
  )
  with server.running():
    client = _client(server)
    with pytest.raises(protocol.ContextLengthError, match='HTTP 400'):
      _chat(client)
    with pytest.raises(protocol.LLMError, match='HTTP 404.*no such model'):
      _chat(client)
  assert len(server.requests) == 2


def test_concurrency_is_bounded():
  server = openai_server.ScriptedServer(
      lambda b: (0.1, openai_server.reply('ok'))
  )
  with server.running():
    client = _client(server, max_concurrency=2)

    async def go():
      try:
        return await asyncio.gather(
            *(client.chat(MESSAGES, PARAMS) for _ in range(6))
        )
      finally:
        await client.aclose()

    out = asyncio.run(go())
  assert len(out) == 6 and server.max_in_flight == 2


def test_tool_role_user_wraps_observations_and_missing_key_is_explicit(
    monkeypatch,
):
  server = openai_server.ScriptedServer(
      lambda b: (200, openai_server.reply('ok'))
  )
  with server.running():
    _chat(_client(server, tool_role='user'))
    assert server.requests[0]['messages'][3] == {
        'role': 'user',
        'content': '<tool_response>\nobs\n</tool_response>',
    }
    monkeypatch.delenv('SA_TEST_KEY', raising=False)
    with pytest.raises(protocol.LLMError, match='SA_TEST_KEY'):
      _chat(_client(server, api_key_env='SA_TEST_KEY'))
    monkeypatch.setenv('SA_TEST_KEY', 'k')
    assert _chat(_client(server, api_key_env='SA_TEST_KEY'))[0].text == 'ok'


def test_token_id_strings_in_logprobs_are_decoded():
  [c] = openai_client.parse_response(
      {
          'choices': [
              {
                  'message': {'content': 'a'},
                  'logprobs': {
                      'content': [
                          {'token': 'token_id:11', 'logprob': -1.0},
                          {'token': 'token_id:12', 'logprob': -2.0},
                      ]
                  },
              }
          ]
      },
      1,
  )
  assert c.token_ids == (11, 12) and c.logprobs == (-1.0, -2.0)


def test_served_policy_versions_give_the_oldest_version():
  choice = {'message': {'content': 'a'}, 'token_ids': [1, 2, 3]}
  got = openai_client.parse_response(
      {
          'choices': [dict(choice, index=0), dict(choice, index=1)],
          'policy_versions': [[4, 4, 5], []],
      },
      2,
  )
  assert [c.policy_version for c in got] == [4, None]
  [plain] = openai_client.parse_response({'choices': [choice]}, 1)
  assert plain.policy_version is None
  with pytest.raises(ValueError, match='policy_versions'):
    openai_client.parse_response(
        {'choices': [choice], 'policy_versions': [[1], [2]]}, 1
    )


def test_structured_tool_calls_become_tool_call_blocks():
  [c] = openai_client.parse_response(
      {
          'choices': [{
              'message': {
                  'content': None,
                  'tool_calls': [
                      {'type': 'function', 'function': {
                          'name': 'search',
                          'arguments': '{"query": ["glass cage"]}'}},
                      {'type': 'function', 'function': {
                          'name': 'visit', 'arguments': 'not json'}},
                  ],
              },
          }]
      },
      1,
  )  # fmt: skip
  parsed = toolcall.parse_assistant(c.text, ['search', 'visit'])
  assert [t.name for t in parsed.tool_calls] == ['search']
  assert parsed.tool_calls[0].arguments == {'query': ['glass cage']}
  assert parsed.has_invalid_tool_call  # the unparsable arguments, reported
  with pytest.raises(ValueError, match='function name'):
    openai_client.parse_response(
        {'choices': [{'message': {'tool_calls': [{'x': 1}]}}]}, 1
    )


def test_retry_after_header_is_honoured():
  server = openai_server.ScriptedServer(
      [
          lambda b: (429, 'slow down'),
          lambda b: (200, openai_server.reply('ok')),
      ]
  )
  server.headers = {'Retry-After': '0.3'}
  with server.running():
    client = _client(server)  # backoff 0.01 s, max 0.02 s ...
    client = openai_client.OpenAIClient(
        dataclasses.replace(client.config, max_backoff_s=5.0)
    )
    start = time.monotonic()
    [c] = _chat(client)
  assert c.text == 'ok' and time.monotonic() - start >= 0.3
  assert client._backoff(1, None) < 0.02  # pylint: disable=protected-access
  assert client._backoff(1, 60.0) == 5.0  # capped by max_backoff_s


def test_undecodable_body_is_retried_then_an_llm_error():
  """httpx errors beyond transport ones (here DecodingError) are LLMErrors."""
  seen = []

  def handler(request):
    seen.append(request)
    return httpx.Response(
        200, headers={'content-encoding': 'gzip'}, content=b'not gzip'
    )

  config = openai_client.OpenAIConfig(
      base_url='http://judge.invalid/v1', model='m', max_retries=1,
      backoff_s=0.01,
  )  # fmt: skip
  client = openai_client.OpenAIClient(
      config, transport=httpx.MockTransport(handler)
  )
  with pytest.raises(protocol.LLMError, match='2 attempts.*DecodingError'):
    _chat(client)
  assert len(seen) == 2
