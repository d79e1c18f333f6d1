"""Turns (trajectory records) <-> protocol messages (what LLMs are sent).

A message carries the turn's role and content, and when present its
reasoning, tool name and parsed tool calls; the LLM backend decides how to
send them (search_agent/llm/openai_client.py inlines reasoning, the sampler
adapter renders them with the renderer).
"""

import json

from search_agent.chat import turns
from search_agent.llm import protocol


def to_message(turn: turns.Turn) -> protocol.Message:
  """A Turn as a protocol message (reasoning and tool name when present)."""
  m: protocol.Message = {'role': turn.role, 'content': turn.content}
  if turn.reasoning:
    m['reasoning'] = turn.reasoning
  if turn.name:
    m['name'] = turn.name
  if turn.tool_calls:
    m['tool_calls'] = [
        {'name': c.name, 'arguments': json.loads(json.dumps(c.arguments))}
        for c in turn.tool_calls
    ]
  return m


def to_turn(m: protocol.Message) -> turns.Turn:
  """A protocol message as a Turn."""
  calls = tuple(
      turns.ToolCall(name=c['name'], arguments=dict(c.get('arguments', {})))
      for c in m.get('tool_calls', ())
  )
  return turns.Turn(
      role=m['role'],
      content=m.get('content', ''),
      reasoning=m.get('reasoning', ''),
      tool_calls=calls,
      name=m.get('name', ''),
  )
