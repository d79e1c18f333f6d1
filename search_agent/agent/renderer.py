"""Token-exact chat rendering: messages -> token ids + loss mask.

One renderer for SFT data, rollout prompts and the RL learner. The default
template ('chatml') renders each message as

  <|im_start|>{role}\\n{body}<|im_end|>\\n

with the assistant body `<think>\\n{reasoning}\\n</think>\\n{content}` (the think
block only when there is reasoning), tool observations as role `tool` with the
observation text as body, and the generation prompt `<|im_start|>assistant\\n`.
The 'qwen3' template is Qwen3's: tool observations are `user` turns of
`<tool_response>\\n{text}\\n</tool_response>` blocks (consecutive ones merged
into one turn, joined by '\\n') and the think block ends with '\\n</think>\\n\\n'.

Assistant content is rendered as written (it already holds its
`<tool_call>{json}</tool_call>` / `<answer>` blocks, see Turn). Only when the
content holds no tool-call block are `tool_calls` serialized after it, Qwen3
style: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, joined
by '\\n' (and separated from non-empty content by '\\n').

Token boundaries: `<|im_start|>` and `<|im_end|>` are inserted by id, and the
text between them is encoded in separate segments — the role header
('assistant\\n'), the body, the separator after `<|im_end|>` — never
re-tokenized across a boundary. Hence rendering messages[:k] with the
generation prompt is a token prefix of rendering messages whenever messages[k]
is an assistant turn: rollout tokens and training tokens agree. (A whole-string
HF `apply_chat_template` + encode can differ from this at a boundary, e.g. when
a body starts with '\\n'; ours is the tokenization a sampler continuing the
prompt sees.)

Loss: only trainable assistant turns (Turn.trainable: not invalid, loss=True)
carry loss, on the body and the closing `<|im_end|>`; the role header, the
separator, and system/user/tool tokens never do.
"""

import dataclasses
import json
from typing import Sequence

from search_agent.agent import trajectory
from search_agent.model import tokenizer as tokenizer_lib


class RenderError(ValueError):
  """Messages cannot be rendered (unknown role, empty conversation...)."""


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
    raise RenderError(
        f'unknown chat template {name!r}; choose one of {sorted(TEMPLATES)}'
    )
  return TEMPLATES[name]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnSpan:
  """Where one message sits in a rendered sequence.

  Attributes:
    index: Position of the message in the input.
    role: Its role.
    start: First token (the turn header, for a message that opens a turn).
    end: One past its last token (the separator, for one that closes a turn).
  """

  index: int
  role: str
  start: int
  end: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class RenderedSequence:
  """Token ids with a loss mask, aligned position by position.

  Attributes:
    token_ids: The rendered tokens.
    loss_mask: 1 for eligible assistant tokens, else 0.
    turn_spans: One span per message; the generation prompt, if added, is
      the tail after the last span.
  """

  token_ids: tuple[int, ...]
  loss_mask: tuple[int, ...]
  turn_spans: tuple[TurnSpan, ...]

  @property
  def num_loss_tokens(self) -> int:
    return sum(self.loss_mask)


def assistant_body(turn: trajectory.Turn, template: ChatTemplate) -> str:
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


def _group(
    messages: Sequence[trajectory.Turn], template: ChatTemplate
) -> list[list[int]]:
  """Message indices grouped into turns (merged tool runs share one)."""
  groups: list[list[int]] = []
  for i, m in enumerate(messages):
    if m.role not in trajectory.ROLES:
      raise RenderError(
          f'messages[{i}].role {m.role!r} is not one of {trajectory.ROLES}'
      )
    merge = (
        template.merge_tool_turns
        and m.role == 'tool'
        and groups
        and messages[groups[-1][-1]].role == 'tool'
    )
    if merge:
      groups[-1].append(i)
    else:
      groups.append([i])
  return groups


@dataclasses.dataclass(frozen=True)
class _Segment:
  """A piece of the rendering: a single marker token, or text to encode."""

  text: str
  marker: bool
  loss: int
  index: int  # message index; -1 for the generation prompt


def _segments(
    messages: Sequence[trajectory.Turn],
    template: ChatTemplate,
    add_generation_prompt: bool,
) -> list[_Segment]:
  """The rendering as segments, each encoded on its own."""
  out = []
  for group in _group(messages, template):
    first = messages[group[0]]
    role = template.tool_role if first.role == 'tool' else first.role
    out.append(_Segment(template.turn_start, True, 0, group[0]))
    out.append(_Segment(role + '\n', False, 0, group[0]))
    for n, i in enumerate(group):
      m = messages[i]
      if m.role == 'assistant':
        loss = int(m.trainable)
        out.append(_Segment(assistant_body(m, template), False, loss, i))
        out.append(_Segment(template.turn_end, True, loss, i))
      else:
        body = m.content
        if m.role == 'tool':
          join = template.tool_join if n > 0 else ''
          body = join + template.tool_open + body + template.tool_close
        out.append(_Segment(body, False, 0, i))
        if n == len(group) - 1:
          out.append(_Segment(template.turn_end, True, 0, i))
    out.append(_Segment(template.turn_separator, False, 0, group[-1]))
  if add_generation_prompt:
    out.append(_Segment(template.turn_start, True, 0, -1))
    out.append(_Segment('assistant\n', False, 0, -1))
  return out


def render(
    messages: Sequence[trajectory.Turn],
    tokenizer: tokenizer_lib.Tokenizer,
    *,
    add_generation_prompt: bool = False,
    template: ChatTemplate = CHATML,
) -> RenderedSequence:
  """Renders messages to token ids and a loss mask (see module docstring).

  Args:
    messages: The conversation (Turn records).
    tokenizer: Must have `template.turn_start` / `turn_end` as single tokens.
    add_generation_prompt: Append the assistant header to prompt the model.
    template: The chat template.

  Returns:
    The RenderedSequence.
  """
  if not messages and not add_generation_prompt:
    raise RenderError('nothing to render: messages is empty')
  marker_ids = {
      t: tokenizer.token_id(t) for t in (template.turn_start, template.turn_end)
  }
  segments = _segments(messages, template, add_generation_prompt)
  texts = [s.text for s in segments if not s.marker]
  encoded = iter(tokenizer.encode_batch(texts))
  ids: list[int] = []
  mask: list[int] = []
  bounds: dict[int, list[int]] = {}
  for s in segments:
    tokens = [marker_ids[s.text]] if s.marker else next(encoded)
    if s.index >= 0:
      bounds.setdefault(s.index, [len(ids), len(ids)])[1] = len(ids) + len(
          tokens
      )
    ids.extend(tokens)
    mask.extend([s.loss] * len(tokens))
  spans = tuple(
      TurnSpan(index=i, role=messages[i].role, start=b[0], end=b[1])
      for i, b in sorted(bounds.items())
  )
  return RenderedSequence(
      token_ids=tuple(ids), loss_mask=tuple(mask), turn_spans=spans
  )


def render_text(
    messages: Sequence[trajectory.Turn],
    *,
    add_generation_prompt: bool = False,
    template: ChatTemplate = CHATML,
) -> str:
  """The rendered conversation as text (what `render` tokenizes)."""
  return ''.join(
      s.text for s in _segments(messages, template, add_generation_prompt)
  )


def generation_prompt(
    tokenizer: tokenizer_lib.Tokenizer, template: ChatTemplate = CHATML
) -> list[int]:
  """The assistant header that prompts the model to generate a turn."""
  return [tokenizer.token_id(template.turn_start)] + tokenizer.encode(
      'assistant\n'
  )


def stop_token_ids(
    tokenizer: tokenizer_lib.Tokenizer, template: ChatTemplate = CHATML
) -> tuple[int, ...]:
  """Token ids that end a generated assistant turn (for the sampler)."""
  return (tokenizer.token_id(template.turn_end),)


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
