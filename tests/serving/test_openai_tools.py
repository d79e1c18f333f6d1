"""OpenAI function calling, top_logprobs and echo: served or refused."""

import json

import openai
import pytest

from search_agent.serving import bodies
from search_agent.serving import openai_tools

TOOL = {
    'type': 'function',
    'function': {
        'name': 'search',
        'description': 'Search the web.',
        'parameters': {
            'type': 'object',
            'properties': {'query': {'type': 'string'}},
            'required': ['query'],
        },
    },
}
MESSAGES = [
    {'role': 'system', 'content': 'You answer.'},
    {'role': 'user', 'content': 'Who was Lothair II?'},
]


def test_tools_go_into_the_system_message():
  out = openai_tools.with_tools(MESSAGES, [TOOL])
  assert out[1] == MESSAGES[1]
  system = out[0]['content']
  assert system.startswith('You answer.\n\n# Tools')
  assert json.dumps(TOOL) in system and '<tool_call>' in system
  no_system = openai_tools.with_tools(MESSAGES[1:], [TOOL])
  assert no_system[0]['role'] == 'system' and len(no_system) == 2
  assert openai_tools.with_tools(MESSAGES, []) == MESSAGES


def test_openai_tool_calls_in_history_become_project_calls():
  history = MESSAGES + [
      {'role': 'assistant', 'content': None, 'tool_calls': [{
          'id': 'call_1', 'type': 'function',
          'function': {'name': 'search', 'arguments': '{"query": "x"}'},
      }]},
      {'role': 'tool', 'tool_call_id': 'call_1', 'content': 'found x'},
  ]  # fmt: skip
  out = openai_tools.with_tools(history, [TOOL])
  assert out[2] == {
      'role': 'assistant',
      'content': '',
      'tool_calls': [{'name': 'search', 'arguments': {'query': 'x'}}],
  }
  assert out[3] == {'role': 'tool', 'content': 'found x'}
  bad = MESSAGES + [{'role': 'assistant', 'tool_calls': [{'function': 1}]}]
  with pytest.raises(bodies.BadRequest, match='tool_calls'):
    openai_tools.with_tools(bad, [TOOL])


def test_reply_parses_calls_of_requested_tools_only():
  text = (
      '<think>\nhm\n</think>\n\nLet me look.\n<tool_call>\n{"name": "search",'
      ' "arguments": {"query": "Lothair"}}\n</tool_call>\n<tool_call>\n'
      '{"name": "open", "arguments": {}}\n</tool_call>'
  )
  content, calls = openai_tools.reply(text, [TOOL])
  assert [c['function']['name'] for c in calls] == ['search']
  assert json.loads(calls[0]['function']['arguments']) == {'query': 'Lothair'}
  assert calls[0]['type'] == 'function' and calls[0]['id'].startswith('call_')
  assert '"open"' in content and 'Lothair"' not in content
  assert openai_tools.reply(text, []) == (text, [])
  only_call = '<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>'
  assert openai_tools.reply(only_call, [TOOL])[0] is None


@pytest.mark.parametrize(
    'obj, field',
    [
        ({'tool_choice': 'required'}, 'tool_choice'),
        ({'tool_choice': {'type': 'function'}}, 'tool_choice'),
        ({'tools': {'a': 1}}, 'tools'),
        ({'tools': [{'type': 'function'}]}, 'tools'),
        ({'tools': [{'type': 'code', 'function': {'name': 'a'}}]}, 'tools'),
    ],
)
def test_bad_tool_fields_name_the_field(obj, field):
  with pytest.raises(bodies.BadRequest, match=field):
    openai_tools.requested_tools(obj)


def test_tool_choice_none_shows_no_tools():
  assert (
      openai_tools.requested_tools({'tools': [TOOL], 'tool_choice': 'none'})
      == []
  )


@pytest.mark.maxtext
@pytest.mark.slow
def test_served_tools_top_logprobs_and_echo(server):
  url, served = server
  client = openai.OpenAI(base_url=url + '/v1', api_key='none', max_retries=0)
  r = client.chat.completions.create(
      model='tiny', messages=MESSAGES, tools=[TOOL], max_tokens=3,
      temperature=0.0,
  )  # fmt: skip
  prompt = served.prompts.decode(r.model_extra['prompt_token_ids'])
  assert '<tools>' in prompt and '"name": "search"' in prompt
  history = MESSAGES + [
      {'role': 'assistant', 'content': None, 'tool_calls': [{
          'id': 'call_1', 'type': 'function',
          'function': {'name': 'search', 'arguments': '{"query": "Lothair"}'},
      }]},
      {'role': 'tool', 'tool_call_id': 'call_1', 'content': 'King of Lotharingia'},
  ]  # fmt: skip
  r = client.chat.completions.create(
      model='tiny', messages=history, tools=[TOOL], max_tokens=3,
      temperature=0.0,
  )  # fmt: skip
  prompt = served.prompts.decode(r.model_extra['prompt_token_ids'])
  assert '"arguments": {"query": "Lothair"}' in prompt
  assert 'King of Lotharingia' in prompt
  for kw, field in (
      (dict(tools=[TOOL], tool_choice='required'), 'tool_choice'),
      (dict(logprobs=True, top_logprobs=6), 'top_logprobs'),
      (dict(top_logprobs=2), 'top_logprobs'),
  ):
    with pytest.raises(openai.BadRequestError, match=field):
      client.chat.completions.create(
          model='tiny', messages=MESSAGES, max_tokens=2, **kw
      )
  # top_logprobs: the most likely tokens, the greedy pick first.
  r = client.chat.completions.create(
      model='tiny', messages=MESSAGES, max_tokens=4, temperature=0.0,
      logprobs=True, top_logprobs=3,
  )  # fmt: skip
  content = r.choices[0].logprobs.content
  assert len(content) == 4
  for entry in content:
    lps = [a.logprob for a in entry.top_logprobs]
    assert len(lps) == 3 and lps == sorted(lps, reverse=True)
    assert abs(lps[0] - entry.logprob) < 1e-5
  c = client.completions.create(
      model='tiny', prompt='Lothair II was', max_tokens=3, temperature=0.0,
      logprobs=2,
  )  # fmt: skip
  tops = c.choices[0].logprobs.top_logprobs
  assert len(tops) == 3 and all(1 <= len(t) <= 2 for t in tops)
  with pytest.raises(openai.BadRequestError, match='logprobs 6'):
    client.completions.create(
        model='tiny', prompt='Lothair', max_tokens=2, logprobs=6
    )
  c = client.completions.create(
      model='tiny', prompt='Lothair II was', max_tokens=3, temperature=0.0,
      echo=True,
  )  # fmt: skip
  generated = served.prompts.decode(c.choices[0].model_extra['token_ids'])
  assert c.choices[0].text == 'Lothair II was' + generated
  with pytest.raises(openai.BadRequestError, match='echo'):
    client.completions.create(
        model='tiny', prompt='Lothair', max_tokens=2, echo=True, logprobs=1
    )
