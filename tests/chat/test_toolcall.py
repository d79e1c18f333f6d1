"""Tests for search_agent.chat.toolcall."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from search_agent.chat import toolcall

TOOLS = ('search', 'visit')


def kinds(parsed):
  return [e.kind for e in parsed.errors]


def test_well_formed_tool_call_turn():
  text = (
      '<think>\nI should search.\n</think>\n<tool_call>\n'
      '{"name": "search", "arguments": {"query": ["a b", "c"]}}\n'
      '</tool_call>'
  )
  p = toolcall.parse_assistant(text, TOOLS)
  assert p.reasoning == 'I should search.'
  assert p.content.startswith('<tool_call>') and p.content.endswith(
      '</tool_call>'
  )
  assert len(p.tool_calls) == 1
  assert p.tool_calls[0].name == 'search'
  assert p.tool_calls[0].arguments == {'query': ['a b', 'c']}
  assert p.answer is None
  assert p.errors == ()
  assert not p.has_invalid_tool_call


def test_answer_turn():
  p = toolcall.parse_assistant(
      '<think>done</think>\n<answer>\n Epsom Derby \n</answer>'
  )
  assert p.reasoning == 'done'
  assert p.answer == 'Epsom Derby'
  assert p.tool_calls == ()
  assert p.errors == ()


def test_several_calls_in_one_turn_keep_order():
  text = (
      '<tool_call>{"name": "search", "arguments": {"query": ["x"]}}'
      '</tool_call> then <tool_call>{"name": "visit", "arguments":'
      ' {"url": ["u"], "goal": "g"}}</tool_call>'
  )
  p = toolcall.parse_assistant(text, TOOLS)
  assert [c.name for c in p.tool_calls] == ['search', 'visit']
  assert p.reasoning == ''


def test_arguments_as_json_string_are_accepted():
  call = toolcall.parse_tool_call(
      '{"name": "search", "arguments": "{\\"query\\": [\\"x\\"]}"}'
  )
  assert call.arguments == {'query': ['x']}


@pytest.mark.parametrize(
    'block, kind',
    [
        ('{"name": "search", "arguments": {"query": ["x"]', 'bad_json'),
        ('["search"]', 'not_an_object'),
        ('{"arguments": {}}', 'missing_name'),
        ('{"name": "search", "arguments": [1]}', 'bad_arguments'),
        ('{"name": "search", "arguments": "{not json"}', 'bad_arguments'),
        ('{"name": "browse", "arguments": {}}', 'unknown_tool'),
    ],
)
def test_bad_tool_calls_give_clear_errors(block, kind):
  p = toolcall.parse_assistant(f'<tool_call>{block}</tool_call>', TOOLS)
  assert kinds(p) == [kind]
  assert p.tool_calls == ()
  assert p.has_invalid_tool_call
  assert p.errors[0].message
  assert p.errors[0].snippet


def test_unknown_tool_message_lists_available_tools():
  err = toolcall.parse_tool_call('{"name": "browse"}', TOOLS)
  assert 'browse' in err.message and 'search, visit' in err.message
  assert err.tool == 'browse'


def test_any_name_accepted_without_tool_list():
  call = toolcall.parse_tool_call('{"name": "browse"}')
  assert call.name == 'browse' and call.arguments == {}


def test_unterminated_and_stray_tags():
  p = toolcall.parse_assistant('<tool_call>{"name": "search"', TOOLS)
  assert kinds(p) == ['unterminated_tool_call']
  p = toolcall.parse_assistant('{"name": "search"}</tool_call>', TOOLS)
  assert kinds(p) == ['stray_close_tag']
  p = toolcall.parse_assistant('<answer>Paris')
  assert kinds(p) == ['unterminated_answer'] and p.answer is None
  assert not p.has_invalid_tool_call


def test_unterminated_think_keeps_text_as_reasoning():
  p = toolcall.parse_assistant('<think>looping looping')
  assert kinds(p) == ['unterminated_think']
  assert p.reasoning == 'looping looping'
  assert p.content == ''


def test_close_think_without_open_tag():
  p = toolcall.parse_assistant('plan first\n</think>\n<answer>x</answer>')
  assert p.reasoning == 'plan first'
  assert p.answer == 'x'


def test_tool_call_inside_reasoning_is_not_executed():
  p = toolcall.parse_assistant(
      '<think>maybe <tool_call>{"name": "search"}</tool_call></think>'
      '<answer>y</answer>',
      TOOLS,
  )
  assert p.tool_calls == () and p.answer == 'y' and p.errors == ()


def test_multiple_answers_use_last():
  p = toolcall.parse_assistant('<answer>a</answer><answer>b</answer>')
  assert p.answer == 'b'
  assert kinds(p) == ['multiple_answers']


def test_error_kinds_are_declared():
  texts = [
      '<tool_call>nope</tool_call>',
      '<think>x',
      '<answer>x',
      '</tool_call>',
      '<tool_call>',
  ]
  for text in texts:
    for e in toolcall.parse_assistant(text, TOOLS).errors:
      assert e.kind in toolcall.ERROR_KINDS


def test_made_up_observation_is_flagged():
  p = toolcall.parse_assistant(
      '<tool_call>{"name": "search", "arguments": {}}</tool_call>\n'
      '<tool_response>fake results</tool_response>',
      TOOLS,
  )
  assert kinds(p) == ['hallucinated_observation']
  assert len(p.tool_calls) == 1 and not p.has_invalid_tool_call


_PIECES = st.sampled_from(
    [
        '<think>',
        '</think>',
        '<tool_call>',
        '</tool_call>',
        '<answer>',
        '</answer>',
        '<tool_response>',
        '{"name": "search", "arguments": {}}',
        '{',
        '}',
        '"',
        'text ',
        '\n',
    ]
)


@given(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=12))
def test_never_raises_on_arbitrary_text(parts):
  p = toolcall.parse_assistant(''.join(parts), TOOLS)
  assert all(e.kind in toolcall.ERROR_KINDS for e in p.errors)
  assert all(c.name in TOOLS for c in p.tool_calls)
