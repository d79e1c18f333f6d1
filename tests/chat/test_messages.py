"""Turn <-> message conversion."""

from search_agent.agent import trajectory
from search_agent.chat import messages


def test_to_message_keeps_reasoning_name_and_calls():
  turn = trajectory.Turn(
      role='assistant',
      content='c',
      reasoning='r',
      tool_calls=(trajectory.ToolCall(name='search', arguments={'q': [1]}),),
  )
  assert messages.to_message(turn) == {
      'role': 'assistant',
      'content': 'c',
      'reasoning': 'r',
      'tool_calls': [{'name': 'search', 'arguments': {'q': [1]}}],
  }
  tool = trajectory.Turn(role='tool', content='o', name='visit')
  assert messages.to_message(tool) == {
      'role': 'tool',
      'content': 'o',
      'name': 'visit',
  }


def test_round_trip():
  turn = trajectory.Turn(
      role='assistant',
      content='c',
      reasoning='r',
      tool_calls=(trajectory.ToolCall(name='find', arguments={'p': 'x'}),),
  )
  assert messages.to_turn(messages.to_message(turn)) == turn
