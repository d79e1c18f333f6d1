"""Chat templates: how messages become text, and their HF jinja export.

A ChatTemplate holds the literal pieces of a chatml-style format; the
renderer (`chat.renderer`) turns messages into text segments with it and
tokenizes them. Two are defined (the exact text of each is documented in
`chat.renderer`):

  * 'chatml': `<|im_start|>{role}\\n{body}<|im_end|>\\n`; reasoning as
    `<think>\\n{reasoning}\\n</think>\\n`; tool observations as role `tool`.
  * 'qwen3': Qwen3's format: tool observations as `user` turns of
    `<tool_response>` blocks (consecutive ones merged), reasoning closed by
    `\\n</think>\\n\\n`.

'qwen3' departs from Qwen3's own jinja template in two places, both to stay
prefix-stable: Qwen3 drops the reasoning of assistant turns that precede the
last user query and writes an empty `<think>` block on a last assistant turn
without reasoning; 'qwen3' keeps all reasoning and writes a think block only
when there is reasoning. In an agent run (one question, then tool turns) the
two agree token for token (tests/chat/test_renderer.py).

`to_jinja` exports a template as an HF jinja chat template, so a tokenizer
served by an OpenAI-compatible server renders the same text.
"""

import dataclasses
import json

from search_agent.chat import turns


class TemplateError(ValueError):
  """An unknown chat template was asked for."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChatTemplate:
  """How messages become text segments (see the module docstring).

  Attributes:
    name: Registry name, recorded in manifests.
    turn_start: Opens a turn; must be a single token.
    turn_end: Closes a turn (the assistant's stop token); a single token.
    turn_separator: Text after `turn_end`.
    tool_role: Role name written for tool observations.
    tool_open: Text before each observation in a tool turn.
    tool_close: Text after each observation.
    merge_tool_turns: Consecutive tool messages share one turn.
    tool_join: Text between merged observations.
    think_open: Text before the reasoning.
    think_close: Text after the reasoning.
    call_open: Opens a serialized tool call (also the marker that tells
      whether content already holds its calls).
    call_close: Closes a serialized tool call.
    call_join: Text between serialized calls, and between content and calls.
  """

  name: str
  turn_start: str = '<|im_start|>'
  turn_end: str = '<|im_end|>'
  turn_separator: str = '\n'
  tool_role: str = 'tool'
  tool_open: str = ''
  tool_close: str = ''
  merge_tool_turns: bool = False
  tool_join: str = '\n'
  think_open: str = '<think>\n'
  think_close: str = '\n</think>\n'
  call_open: str = '<tool_call>\n'
  call_close: str = '\n</tool_call>'
  call_join: str = '\n'


CHATML = ChatTemplate(name='chatml')
QWEN3 = ChatTemplate(
    name='qwen3',
    tool_role='user',
    tool_open='<tool_response>\n',
    tool_close='\n</tool_response>',
    merge_tool_turns=True,
    think_close='\n</think>\n\n',
)
TEMPLATES = {t.name: t for t in (CHATML, QWEN3)}


def get_template(name: str) -> ChatTemplate:
  """Looks up a template by name ('chatml' or 'qwen3')."""
  if name not in TEMPLATES:
    raise TemplateError(
        f'unknown chat template {name!r}; choose one of {sorted(TEMPLATES)}'
    )
  return TEMPLATES[name]


def assistant_body(turn: turns.Turn, template: ChatTemplate) -> str:
  """The text of an assistant turn between its header and `turn_end`."""
  body = ''
  if turn.reasoning:
    body = template.think_open + turn.reasoning + template.think_close
  body += turn.content
  marker = template.call_open.strip()
  if turn.tool_calls and marker not in turn.content:
    calls = [
        template.call_open
        + json.dumps(
            {'name': c.name, 'arguments': c.arguments}, ensure_ascii=False
        )
        + template.call_close
        for c in turn.tool_calls
    ]
    body += (
        template.call_join if turn.content else ''
    ) + template.call_join.join(calls)
  return body


_JINJA = """\
{%- for message in messages -%}
{%- set role = message.role -%}
{%- set content = message.content if message.content is string else '' -%}
{%- set after_tool = not loop.first and messages[loop.index0 - 1].role == 'tool' -%}
{%- set before_tool = not loop.last and messages[loop.index0 + 1].role == 'tool' -%}
{%- if role == 'tool' -%}
{%- if MERGE and after_tool -%}{{- TOOL_JOIN -}}
{%- else -%}{{- TURN_START + TOOL_ROLE + '\\n' -}}{%- endif -%}
{{- TOOL_OPEN + content + TOOL_CLOSE -}}
{%- if not (MERGE and before_tool) -%}{{- TURN_END + SEPARATOR -}}{%- endif -%}
{%- else -%}
{{- TURN_START + role + '\\n' -}}
{%- if role == 'assistant' -%}
{%- if message.reasoning_content -%}
{{- THINK_OPEN + message.reasoning_content + THINK_CLOSE -}}
{%- endif -%}
{{- content -}}
{%- if message.tool_calls and CALL_MARKER not in content -%}
{%- for call in message.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{%- if content or not loop.first -%}{{- CALL_JOIN -}}{%- endif -%}
{{- CALL_OPEN + '{"name": ' + (f.name | tojson) + ', "arguments": ' -}}
{{- (f.arguments if f.arguments is string else f.arguments | tojson) -}}
{{- '}' + CALL_CLOSE -}}
{%- endfor -%}
{%- endif -%}
{%- else -%}{{- content -}}{%- endif -%}
{{- TURN_END + SEPARATOR -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- TURN_START + 'assistant\\n' -}}{%- endif -%}
"""


def to_jinja(template: ChatTemplate) -> str:
  """The template as an HF jinja chat template (tokenizer_config.json).

  Served through an OpenAI-compatible server (vLLM, SGLang), it renders the
  same text as `render_text` for HF-style messages (`reasoning_content`,
  `tool_calls`). The server tokenizes that text as one string, which can
  differ from `render` at a segment boundary (see the module docstring).
  """
  values = {
      'TURN_START': template.turn_start,
      'TURN_END': template.turn_end,
      'SEPARATOR': template.turn_separator,
      'TOOL_ROLE': template.tool_role,
      'TOOL_OPEN': template.tool_open,
      'TOOL_CLOSE': template.tool_close,
      'TOOL_JOIN': template.tool_join,
      'THINK_OPEN': template.think_open,
      'THINK_CLOSE': template.think_close,
      'CALL_MARKER': template.call_open.strip(),
      'CALL_OPEN': template.call_open,
      'CALL_CLOSE': template.call_close,
      'CALL_JOIN': template.call_join,
  }
  text = _JINJA.replace(
      'MERGE', 'true' if template.merge_tool_turns else 'false'
  )
  for name, value in values.items():
    text = text.replace(name, json.dumps(value, ensure_ascii=False))
  return text
