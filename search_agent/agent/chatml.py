"""Importer for chatml trajectories with `<tool_call>` blocks.

Input (one JSON object per line, e.g. the WebDancer sample data):

  {"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...],
   "functions": [{"name_for_model": "search", "parameters": {...}}, ...],
   "answer": [["reference"]], "tag": ..., "id": optional, ...}

Assistant turns hold `<think>`, `<tool_call>` and `<answer>` blocks; tool
results come back as user turns wrapped in `<tool_response>`. The importer
turns them into `trajectory.Trajectory`: tool results become role 'tool'
turns named after the call they answer, an assistant turn whose tool call
does not parse, names an unknown tool or misses a required argument is marked
`invalid=True`, and the reference answer goes to `meta['answer']` (other
surface forms to `meta['aliases']`). Per-turn parse problems are listed in
`meta['parse_errors']`; a line that cannot be imported at all raises
`ChatmlFormatError` (`import_chatml_file` collects them as `LineError`s).
"""

import dataclasses
import hashlib
import json
import os
import re
from typing import Any

from search_agent.agent import trajectory
from search_agent.chat import toolcall

_RESPONSE_RE = re.compile(
    r'<tool_response>(.*?)(?:</tool_response>|\Z)', re.DOTALL
)
_TOOLS_RE = re.compile(r'<tools>(.*?)</tools>', re.DOTALL)
_TOOL_ROLES = ('tool', 'function')


class ChatmlFormatError(trajectory.TrajectoryFormatError):
  """A chatml line cannot be imported; the message says which field."""


def _digest(value: Any) -> str:
  data = json.dumps(value, sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(data.encode('utf-8')).hexdigest()[:16]


def extract_question(prompt: str) -> str:
  """The question inside a first user message.

  Prompts that list tools end with 'User: <question>'; otherwise the whole
  message is the question.
  """
  at = prompt.rfind('\nUser:')
  if at < 0 and prompt.startswith('User:'):
    at = 0
  if at < 0:
    return prompt.strip()
  return prompt[prompt.index('User:', at) + len('User:') :].strip()


def tool_specs(obj: dict[str, Any], prompt: str) -> dict[str, tuple[str, ...]]:
  """Tool name -> required argument names, from `functions` or `<tools>`.

  Returns {} when the line declares no tools (then any name is accepted).
  """
  specs = obj.get('functions')
  if not specs:
    match = _TOOLS_RE.search(prompt)
    if not match:
      return {}
    try:
      specs = json.loads('[' + match.group(1).strip() + ']')
    except json.JSONDecodeError as e:
      raise ChatmlFormatError(
          f'<tools> block in the first user message is not JSON: {e}'
      ) from e
  out = {}
  for spec in specs:
    if not isinstance(spec, dict):
      raise ChatmlFormatError(f'functions entry is not an object: {spec!r:.80}')
    spec = spec.get('function', spec)
    name = spec.get('name_for_model') or spec.get('name')
    if not isinstance(name, str):
      raise ChatmlFormatError(f'functions entry without a name: {spec!r:.80}')
    required = (spec.get('parameters') or {}).get('required') or ()
    out[name] = tuple(required)
  return out


def reference_answers(raw: Any) -> list[str]:
  """Flattens `answer` (str, [str] or [[str]]) into unique strings."""
  if raw is None:
    return []
  if isinstance(raw, str):
    return [raw]
  if not isinstance(raw, list):
    raise ChatmlFormatError(f'answer must be a string or list, got {raw!r:.80}')
  out = []
  for item in raw:
    for value in reference_answers(item):
      if value not in out:
        out.append(value)
  return out


def _assistant_turn(
    text: str, specs: dict[str, tuple[str, ...]], index: int
) -> tuple[trajectory.Turn, toolcall.ParsedAssistant, list[dict[str, Any]]]:
  parsed = toolcall.parse_assistant(text, specs or None)
  errors = list(parsed.errors)
  for call in parsed.tool_calls:
    missing = [a for a in specs.get(call.name, ()) if a not in call.arguments]
    if missing:
      errors.append(
          toolcall.ParseError(
              kind='missing_argument',
              message=f'{call.name} needs argument(s) {", ".join(missing)}',
              snippet=json.dumps(call.arguments)[:200],
              tool=call.name,
          )
      )
  invalid = any(e.kind in toolcall.TOOL_CALL_ERRORS for e in errors)
  unterminated = any(e.kind == 'unterminated_think' for e in errors)
  turn = trajectory.Turn(
      role='assistant',
      # An unterminated <think> is kept verbatim so detectors still see it.
      content=text if unterminated else parsed.content,
      reasoning='' if unterminated else parsed.reasoning,
      tool_calls=parsed.tool_calls,
      invalid=invalid,
      loss=not invalid,
  )
  records = [
      {'turn': index, 'kind': e.kind, 'message': e.message, 'tool': e.tool}
      for e in errors
  ]
  return turn, parsed, records


def _message(m: Any, i: int) -> tuple[str, str]:
  if not isinstance(m, dict):
    raise ChatmlFormatError(f'messages[{i}] is not an object')
  role, content = m.get('role'), m.get('content')
  if not isinstance(role, str):
    raise ChatmlFormatError(f'messages[{i}] has no role')
  if not isinstance(content, str):
    raise ChatmlFormatError(f'messages[{i}].content is not a string')
  if m.get('tool_calls'):  # would be lost: only <tool_call> text is read
    raise ChatmlFormatError(
        f'messages[{i}] has structured "tool_calls"; chatml lines hold them'
        ' as <tool_call> blocks in content (write this line in the'
        ' trajectory format, with task_id and question, instead)'
    )
  if role in _TOOL_ROLES:
    role = 'tool'
  if role not in trajectory.ROLES:
    raise ChatmlFormatError(f'messages[{i}].role {role!r} is unknown')
  return role, content


def _turns(
    messages: list[Any], specs: dict[str, tuple[str, ...]]
) -> tuple[list[trajectory.Turn], str | None, list[dict[str, Any]]]:
  """Converts the message list; returns (turns, final answer, parse errors)."""
  turns, problems, pending, answer = [], [], [], None
  seen_user = False
  for i, m in enumerate(messages):
    role, content = _message(m, i)
    if role == 'assistant':
      turn, parsed, records = _assistant_turn(content, specs, len(turns))
      turns.append(turn)
      problems.extend(records)
      pending, answer = [c.name for c in parsed.tool_calls], parsed.answer
      continue
    is_response = content.lstrip().startswith('<tool_response>')
    if role == 'tool' or (role == 'user' and seen_user and is_response):
      bodies = _RESPONSE_RE.findall(content) if is_response else [content]
      for body in bodies:
        name = pending.pop(0) if pending else ''
        turns.append(
            trajectory.Turn(role='tool', content=body.strip(), name=name)
        )
      continue
    seen_user = seen_user or role == 'user'
    turns.append(trajectory.Turn(role=role, content=content))
  return turns, answer, problems


def import_chatml_line(obj: Any) -> trajectory.Trajectory:
  """Converts one chatml record into a Trajectory.

  Raises:
    ChatmlFormatError: the record is not an object, has no messages, no user
      question or no assistant turn, or a message is malformed.
  """
  if not isinstance(obj, dict):
    raise ChatmlFormatError(f'expected a JSON object, got {type(obj).__name__}')
  messages = obj.get('messages')
  if not isinstance(messages, list) or not messages:
    raise ChatmlFormatError('missing or empty field "messages"')
  user = next(
      (m for m in messages if isinstance(m, dict) and m.get('role') == 'user'),
      None,
  )
  if user is None or not isinstance(user.get('content'), str):
    raise ChatmlFormatError('no user message holding the question')
  specs = tool_specs(obj, user['content'])
  turns, answer, problems = _turns(messages, specs)
  if not any(t.role == 'assistant' for t in turns):
    raise ChatmlFormatError('no assistant turn')
  question = extract_question(user['content'])
  answers = reference_answers(obj.get('answer'))
  # Terminated only if the conversation ends on an assistant answer.
  final = answer if turns[-1].role == 'assistant' else None
  meta = {
      'source': 'chatml',
      'tools': sorted(specs),
      'parse_errors': problems,
  }
  if answers:
    meta['answer'], meta['aliases'] = answers[0], answers[1:]
  for key in ('tag', 'task', 'type'):
    if key in obj:
      meta[key] = obj[key]
  return trajectory.Trajectory(
      id=str(obj.get('id') or 'chatml-' + _digest(messages)),
      task_id=str(obj.get('task_id') or 'q-' + _digest(question)),
      question=question,
      messages=tuple(turns),
      final_answer=final,
      status='answered' if final is not None else 'failed',
      error=None
      if final is not None
      else ('imported chatml trajectory does not end with an <answer> block'),
      meta=meta,
  )


def import_chatml_file(
    path: str | os.PathLike[str],
) -> tuple[list[trajectory.Trajectory], list[trajectory.LineError]]:
  """Imports every line; returns (trajectories, per-line errors).

  A line that fails is reported with its number and reason, never dropped
  silently. Repeated ids get a '-<n>' suffix so ids stay unique in the file.
  """
  trajs, errors, seen = [], [], {}
  for _, item in trajectory.parse_json_lines(path, import_chatml_line):
    if isinstance(item, trajectory.LineError):
      errors.append(item)
      continue
    n = seen.get(item.id, 0)
    seen[item.id] = n + 1
    trajs.append(dataclasses.replace(item, id=f'{item.id}-{n}') if n else item)
  return trajs, errors
