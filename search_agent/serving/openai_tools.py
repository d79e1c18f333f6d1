"""OpenAI function calling on the chat route: tools in, `tool_calls` out.

The request's `tools` are written into the system message (the first one,
or a new one put first) as the agent's own system prompt lists them: one
JSON schema a line inside `<tools>`, then how to call. Earlier assistant
turns' OpenAI `tool_calls` (`function.arguments` a JSON string) become the
project's calls, which the chat template serializes as `<tool_call>`
blocks. In the reply, every `<tool_call>` block that parses and names a
requested tool (chat/toolcall.py) becomes an OpenAI tool call and leaves
the content; one that does not stays in the content as written.

`tool_choice` 'auto' (the default with tools) and 'none' (tools neither
shown nor parsed) are served; 'required' and a named function would need
constrained decoding and are refused.
"""

import json
import re
from typing import Any
import uuid

from search_agent.chat import toolcall
from search_agent.chat import turns
from search_agent.serving import bodies

TOOLS_HEADER = """\
# Tools

You may call one or more tools per turn. The tools are described by these \
JSON schemas:
<tools>
{tools}
</tools>

Call a tool by writing one block per call:
<tool_call>
{{"name": "<tool name>", "arguments": {{<arguments as JSON>}}}}
</tool_call>"""
_BLOCK_RE = re.compile(
    re.escape(toolcall.CALL_OPEN) + r'(.*?)' + re.escape(toolcall.CALL_CLOSE),
    re.DOTALL,
)


def requested_tools(obj: dict[str, Any]) -> list[dict[str, Any]]:
  """The tools to show and parse ([] for none), or BadRequest."""
  tools = obj.get('tools')
  choice = obj.get('tool_choice')
  if choice not in (None, 'auto', 'none'):
    raise bodies.BadRequest(
        400,
        f'tool_choice {bodies.clip(choice)} is not supported (it needs'
        " constrained decoding); use 'auto' or 'none'",
    )
  if tools is None:
    return []
  if not isinstance(tools, list):
    raise bodies.BadRequest(
        400, f'tools must be a list, got {bodies.clip(tools)}'
    )
  for t in tools:
    fn = t.get('function') if isinstance(t, dict) else None
    if (
        t.get('type', 'function') != 'function'
        or not isinstance(fn, dict)
        or not isinstance(fn.get('name'), str)
        or not fn['name']
        or not isinstance(fn.get('parameters', {}), dict)
    ):
      raise bodies.BadRequest(
          400,
          'each of tools must be {"type": "function", "function": {"name":'
          f' str, "parameters": object}}, got {bodies.clip(t)}',
      )
  return [] if choice == 'none' else tools


def with_tools(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
  """Messages in the project's shape, `tools` listed in the system message."""
  out = [_message(m) for m in messages]
  if not tools:
    return out
  text = TOOLS_HEADER.format(
      tools='\n'.join(json.dumps(t, ensure_ascii=False) for t in tools)
  )
  if out[0]['role'] == 'system':
    system = out[0]['content']
    out[0] = dict(out[0], content=f'{system}\n\n{text}' if system else text)
  else:
    out.insert(0, {'role': 'system', 'content': text})
  return out


def _message(m: dict[str, Any]) -> dict[str, Any]:
  """One OpenAI message as a protocol message (tool calls converted)."""
  out = {k: v for k, v in m.items() if k in ('role', 'name')}
  out['content'] = m.get('content') or ''
  calls = m.get('tool_calls')
  if calls is None:
    return out
  if not isinstance(calls, list):
    raise bodies.BadRequest(
        400, f'tool_calls must be a list, got {bodies.clip(calls)}'
    )
  out['tool_calls'] = []
  for c in calls:
    fn = c.get('function', c) if isinstance(c, dict) else None
    parsed = None
    if isinstance(fn, dict):
      parsed = toolcall.parse_tool_call(
          json.dumps(
              {'name': fn.get('name'), 'arguments': fn.get('arguments', {})}
          )
      )
    if not isinstance(parsed, turns.ToolCall):
      raise bodies.BadRequest(
          400,
          'each of tool_calls must be {"function": {"name": str, "arguments":'
          f' JSON object or its text}}}}, got {bodies.clip(c)}',
      )
    out['tool_calls'].append(
        {'name': parsed.name, 'arguments': parsed.arguments}
    )
  return out


def reply(
    text: str, tools: list[dict[str, Any]]
) -> tuple[str | None, list[dict[str, Any]]]:
  """(content, OpenAI tool_calls) of generated text."""
  if not tools:
    return text, []
  names = {t['function']['name'] for t in tools}
  calls = []

  def take(match: re.Match) -> str:
    parsed = toolcall.parse_tool_call(match.group(1), names)
    if isinstance(parsed, toolcall.ParseError):
      return match.group(0)
    calls.append(
        {
            'id': f'call_{uuid.uuid4().hex[:24]}',
            'type': 'function',
            'function': {
                'name': parsed.name,
                'arguments': json.dumps(parsed.arguments, ensure_ascii=False),
            },
        }
    )
    return ''

  content = _BLOCK_RE.sub(take, text).strip()
  return (content or None) if calls else text, calls
