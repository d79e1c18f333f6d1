"""Parsing of assistant text: reasoning, `<tool_call>` blocks and `<answer>`.

The assistant writes

  <think> reasoning </think>
  visible text, then either
  <tool_call>{"name": "search", "arguments": {"query": ["..."]}}</tool_call>
  (one or more) or <answer> final answer </answer>

`parse_assistant(text)` splits this into a `ParsedAssistant`. It never
raises on malformed model output: every problem becomes a `ParseError` with a
kind and a message that can be shown to the model as an error observation.
Reasoning and content are stripped of surrounding whitespace; the content
keeps the `<tool_call>` / `<answer>` blocks as written.
"""

import dataclasses
import json
import re
from typing import Any, Collection

from search_agent.chat import turns

THINK_OPEN, THINK_CLOSE = '<think>', '</think>'
CALL_OPEN, CALL_CLOSE = '<tool_call>', '</tool_call>'
ANSWER_OPEN, ANSWER_CLOSE = '<answer>', '</answer>'
RESPONSE_OPEN = '<tool_response>'

# Error kinds that make a turn's tool call invalid (the turn stays as context
# but carries no loss).
TOOL_CALL_ERRORS = frozenset(
    {
        'bad_json',
        'not_an_object',
        'missing_name',
        'bad_arguments',
        'unknown_tool',
        'missing_argument',
        'unterminated_tool_call',
        'stray_close_tag',
    }
)
ERROR_KINDS = TOOL_CALL_ERRORS | {
    'unterminated_think',
    'unterminated_answer',
    'multiple_answers',
    'hallucinated_observation',
}

_BLOCK_RE = re.compile(
    re.escape(CALL_OPEN) + r'(.*?)' + re.escape(CALL_CLOSE), re.DOTALL
)
_ANSWER_RE = re.compile(
    re.escape(ANSWER_OPEN) + r'(.*?)' + re.escape(ANSWER_CLOSE), re.DOTALL
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParseError:
  """One problem found in assistant text.

  Attributes:
    kind: One of ERROR_KINDS.
    message: What was wrong and what the model should do instead.
    snippet: The offending text (truncated to 200 characters).
    tool: The tool name involved, when the call named one.
  """

  kind: str
  message: str
  snippet: str = ''
  tool: str = ''


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParsedAssistant:
  """An assistant message split into its parts.

  Attributes:
    reasoning: Content of the `<think>` block ('' if none).
    content: Text after the reasoning, blocks included as written.
    tool_calls: Tool calls that parsed (and named a known tool, if given).
    answer: Stripped content of the `<answer>` block; None if there is none.
    errors: Problems found; empty when the text is well formed.
  """

  reasoning: str
  content: str
  tool_calls: tuple[turns.ToolCall, ...]
  answer: str | None
  errors: tuple[ParseError, ...]

  @property
  def has_invalid_tool_call(self) -> bool:
    """True when a tool call failed to parse or validate."""
    return any(e.kind in TOOL_CALL_ERRORS for e in self.errors)


def _error(
    kind: str, message: str, snippet: str = '', tool: str = ''
) -> ParseError:
  return ParseError(
      kind=kind, message=message, snippet=snippet[:200], tool=tool
  )


def split_reasoning(text: str) -> tuple[str, str, ParseError | None]:
  """Splits `<think>...</think>` off the front of `text`.

  A closing tag without an opening one (chat templates that put `<think>` in
  the prompt) counts everything before it as reasoning.

  Returns:
    (reasoning, content, error); on an unterminated `<think>` the reasoning is
    everything after the tag, the content is '' and the error is set.
  """
  open_at = text.find(THINK_OPEN)
  close_at = text.find(THINK_CLOSE)
  if open_at < 0 and close_at < 0:
    return '', text.strip(), None
  if close_at < 0:
    rest = text[open_at + len(THINK_OPEN) :]
    return (
        rest.strip(),
        '',
        _error(
            'unterminated_think',
            f'{THINK_OPEN} is never closed: end the reasoning with'
            f' {THINK_CLOSE}',
            rest[-200:],
        ),
    )
  start = 0 if open_at < 0 or open_at > close_at else open_at + len(THINK_OPEN)
  reasoning = text[start:close_at]
  content = text[close_at + len(THINK_CLOSE) :]
  return reasoning.strip(), content.strip(), None


def parse_tool_call(
    block: str, tool_names: Collection[str] | None = None
) -> turns.ToolCall | ParseError:
  """Parses the JSON inside one `<tool_call>` block.

  Args:
    block: Text between `<tool_call>` and `</tool_call>`.
    tool_names: Known tool names; None accepts any name.

  Returns:
    The ToolCall, or a ParseError saying what was wrong.
  """
  try:
    obj = json.loads(block)
  except json.JSONDecodeError as e:
    return _error(
        'bad_json',
        f'tool call is not valid JSON ({e.msg} at char {e.pos}); write'
        ' {"name": ..., "arguments": {...}}',
        block,
    )
  if not isinstance(obj, dict):
    return _error(
        'not_an_object',
        f'tool call must be a JSON object, got {type(obj).__name__}',
        block,
    )
  name = obj.get('name')
  if not isinstance(name, str) or not name:
    return _error('missing_name', 'tool call has no "name" string field', block)
  arguments = _arguments(obj.get('arguments', {}))
  if arguments is None:
    return _error(
        'bad_arguments',
        f'"arguments" of {name!r} must be a JSON object',
        block,
        name,
    )
  if tool_names is not None and name not in tool_names:
    return _error(
        'unknown_tool',
        f'unknown tool {name!r}; available: {", ".join(sorted(tool_names))}',
        block,
        name,
    )
  return turns.ToolCall(
      name=name, arguments=arguments, call_id=str(obj.get('id', ''))
  )


def _arguments(raw: Any) -> dict[str, Any] | None:
  """Arguments as a dict; accepts a JSON-encoded string (OpenAI style)."""
  if isinstance(raw, str):
    try:
      raw = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
      return None
  return raw if isinstance(raw, dict) else None


def parse_content(
    content: str, tool_names: Collection[str] | None = None
) -> tuple[list[turns.ToolCall], str | None, list[ParseError]]:
  """Finds tool calls and the answer in visible (non-reasoning) text."""
  calls, errors = [], []
  for match in _BLOCK_RE.finditer(content):
    parsed = parse_tool_call(match.group(1), tool_names)
    if isinstance(parsed, ParseError):
      errors.append(parsed)
    else:
      calls.append(parsed)
  remainder = _BLOCK_RE.sub('', content)
  if CALL_OPEN in remainder:
    tail = remainder[remainder.find(CALL_OPEN) :]
    errors.append(
        _error(
            'unterminated_tool_call',
            f'{CALL_OPEN} is never closed: end the call with {CALL_CLOSE}',
            tail,
        )
    )
  elif CALL_CLOSE in remainder:
    errors.append(
        _error(
            'stray_close_tag',
            f'{CALL_CLOSE} without a matching {CALL_OPEN}',
            remainder,
        )
    )
  if RESPONSE_OPEN in content:
    at = content.find(RESPONSE_OPEN)
    errors.append(
        _error(
            'hallucinated_observation',
            f'the assistant wrote a {RESPONSE_OPEN} block itself: stop after'
            f' {CALL_CLOSE} and wait for the tool',
            content[at:],
        )
    )
  answers = [m.group(1).strip() for m in _ANSWER_RE.finditer(content)]
  if ANSWER_OPEN in _ANSWER_RE.sub('', content):
    errors.append(
        _error(
            'unterminated_answer',
            f'{ANSWER_OPEN} is never closed: end it with {ANSWER_CLOSE}',
            content[content.rfind(ANSWER_OPEN) :],
        )
    )
  if len(answers) > 1:
    errors.append(
        _error(
            'multiple_answers',
            f'{len(answers)} answer blocks; the last one is used',
            content,
        )
    )
  return calls, (answers[-1] if answers else None), errors


def parse_assistant(
    text: str, tool_names: Collection[str] | None = None
) -> ParsedAssistant:
  """Splits assistant text into reasoning, content, tool calls and answer.

  Args:
    text: The raw assistant message (reasoning inline or not).
    tool_names: Known tool names; a call to another name is an
      'unknown_tool' error. None accepts any name.

  Returns:
    The ParsedAssistant; `errors` lists every problem, nothing is raised.
  """
  reasoning, content, think_error = split_reasoning(text)
  calls, answer, errors = parse_content(content, tool_names)
  if think_error is not None:
    errors.insert(0, think_error)
  return ParsedAssistant(
      reasoning=reasoning,
      content=content,
      tool_calls=tuple(calls),
      answer=answer,
      errors=tuple(errors),
  )
