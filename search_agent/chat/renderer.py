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
from typing import Sequence

from search_agent.chat import chat_template
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.chat import turns

# Re-exported, so that callers need only this module.
ChatTemplate = chat_template.ChatTemplate
CHATML = chat_template.CHATML
QWEN3 = chat_template.QWEN3
TEMPLATES = chat_template.TEMPLATES
get_template = chat_template.get_template
assistant_body = chat_template.assistant_body
to_jinja = chat_template.to_jinja


class RenderError(ValueError):
  """Messages cannot be rendered (unknown role, empty conversation...)."""


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


def _group(
    messages: Sequence[turns.Turn], template: chat_template.ChatTemplate
) -> list[list[int]]:
  """Message indices grouped into turns (merged tool runs share one)."""
  groups: list[list[int]] = []
  for i, m in enumerate(messages):
    if m.role not in turns.ROLES:
      raise RenderError(
          f'messages[{i}].role {m.role!r} is not one of {turns.ROLES}'
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
    messages: Sequence[turns.Turn],
    template: chat_template.ChatTemplate,
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
        out.append(
            _Segment(chat_template.assistant_body(m, template), False, loss, i)
        )
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
    messages: Sequence[turns.Turn],
    tokenizer: tokenizer_lib.Tokenizer,
    *,
    add_generation_prompt: bool = False,
    template: chat_template.ChatTemplate = chat_template.CHATML,
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
    messages: Sequence[turns.Turn],
    *,
    add_generation_prompt: bool = False,
    template: chat_template.ChatTemplate = chat_template.CHATML,
) -> str:
  """The rendered conversation as text (what `render` tokenizes)."""
  return ''.join(
      s.text for s in _segments(messages, template, add_generation_prompt)
  )


def render_after_assistant(
    messages: Sequence[turns.Turn],
    tokenizer: tokenizer_lib.Tokenizer,
    *,
    start: int,
    add_generation_prompt: bool = True,
    template: chat_template.ChatTemplate = chat_template.CHATML,
) -> RenderedSequence:
  """The tokens that follow a sampled assistant turn, for the next prompt.

  messages[start - 1] is an assistant turn whose sampled tokens, ending with
  `turn_end`, the caller holds. The result (the separator, messages[start:],
  the generation prompt) appended to them is the next prompt, whatever
  tokenization the sampler chose for the turn; when it chose the canonical
  one, the sum equals `render(messages, add_generation_prompt=...)`. Spans
  index the returned tokens.
  """
  if not 0 < start <= len(messages) or messages[start - 1].role != 'assistant':
    raise RenderError(
        f'messages[start - 1] (start={start}) must be an assistant turn'
    )
  full = render(
      messages,
      tokenizer,
      add_generation_prompt=add_generation_prompt,
      template=template,
  )
  span = next(s for s in full.turn_spans if s.index == start - 1)
  cut = span.end - len(tokenizer.encode(template.turn_separator))
  spans = tuple(
      dataclasses.replace(s, start=max(s.start, cut) - cut, end=s.end - cut)
      for s in full.turn_spans
      if s.end > cut
  )
  return RenderedSequence(
      token_ids=full.token_ids[cut:],
      loss_mask=full.loss_mask[cut:],
      turn_spans=spans,
  )


def generation_prompt(
    tokenizer: tokenizer_lib.Tokenizer,
    template: chat_template.ChatTemplate = chat_template.CHATML,
) -> list[int]:
  """The assistant header that prompts the model to generate a turn."""
  return [tokenizer.token_id(template.turn_start)] + tokenizer.encode(
      'assistant\n'
  )


def stop_token_ids(
    tokenizer: tokenizer_lib.Tokenizer,
    template: chat_template.ChatTemplate = chat_template.CHATML,
) -> tuple[int, ...]:
  """Token ids that end a generated assistant turn (for the sampler)."""
  return (tokenizer.token_id(template.turn_end),)
