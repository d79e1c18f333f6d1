"""The trajectory record (format version 1) and its append-only JSONL store.

One trajectory per line. Every consumer (filters, SFT data, RL learner, eval)
reads this format; importers convert other formats into it.
"""

import dataclasses
import json
import os
from typing import Any, Callable, Iterable, Iterator, TypeVar

from search_agent.chat import turns

SCHEMA_VERSION = 1
T = TypeVar('T')
# The chat message types, defined below the agent (search_agent/chat/).
ROLES = turns.ROLES
ToolCall = turns.ToolCall
Turn = turns.Turn
STATUSES = ('answered', 'max_steps', 'context_limit', 'max_tokens', 'failed')


class TrajectoryFormatError(ValueError):
  """A trajectory line is malformed; the message names the field."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TokenRecord:
  """Token-exact record of a rollout, aligned position by position.

  Attributes:
    token_ids: The full rendered sequence.
    loss_mask: 1 for eligible assistant tokens, else 0.
    logprobs: Sampling log-probability of generated tokens (0.0 elsewhere).
    versions: Policy version that generated each token (-1 if not generated).
    routed_experts: Optional routing record, [tokens][layers][top_k].
  """

  token_ids: tuple[int, ...]
  loss_mask: tuple[int, ...]
  logprobs: tuple[float, ...]
  versions: tuple[int, ...]
  routed_experts: Any = None

  def __post_init__(self):
    n = len(self.token_ids)
    for field in ('loss_mask', 'logprobs', 'versions'):
      if len(getattr(self, field)) != n:
        raise TrajectoryFormatError(
            f'tokens.{field} has {len(getattr(self, field))} entries,'
            f' token_ids has {n}'
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Trajectory:
  """One agent rollout.

  Attributes:
    id: Unique trajectory id.
    task_id: Id of the task it attempts.
    question: The question as given to the agent.
    messages: The conversation, system prompt first.
    final_answer: Content of the `<answer>` block, None if never answered.
    status: One of STATUSES.
    budgets_hit: Names of the budgets that ended or shaped the run.
    error: Failure description when status == 'failed'.
    tokens: Token-exact record when the backend gave tokens and every prompt
      extended the one before it (the context never slid).
    segments: Token-exact segments when the backend gave tokens: each a
      prompt as the sampler received it plus what followed while each next
      prompt extended it (`agent.token_record`); (tokens,) when the context
      never slid.
    timings: Wall-clock figures in seconds (e.g. {'total': 12.3}).
    meta: Free-form provenance (policy model, context policy, source, ...).
  """

  id: str
  task_id: str
  question: str
  messages: tuple[Turn, ...]
  final_answer: str | None = None
  status: str = 'answered'
  budgets_hit: tuple[str, ...] = ()
  error: str | None = None
  tokens: TokenRecord | None = None
  segments: tuple[TokenRecord, ...] = ()
  timings: dict[str, float] = dataclasses.field(default_factory=dict)
  meta: dict[str, Any] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    if self.tokens is not None and not self.segments:
      object.__setattr__(self, 'segments', (self.tokens,))
    if self.status not in STATUSES:
      raise TrajectoryFormatError(
          f'status {self.status!r} is not one of {STATUSES}'
      )
    for i, m in enumerate(self.messages):
      if m.role not in ROLES:
        raise TrajectoryFormatError(
            f'messages[{i}].role {m.role!r} is not one of {ROLES}'
        )

  @property
  def tool_calls(self) -> list[ToolCall]:
    return [c for m in self.messages for c in m.tool_calls]

  def to_json(self) -> dict[str, Any]:
    d = dataclasses.asdict(self)
    if self.tokens is not None and self.segments == (self.tokens,):
      del d['segments']  # one segment: `tokens` holds it
    d['schema_version'] = SCHEMA_VERSION
    return d

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'Trajectory':
    """Builds a Trajectory; raises TrajectoryFormatError naming the field."""
    if not isinstance(obj, dict):
      raise TrajectoryFormatError(f'expected a JSON object, got {type(obj)}')
    version = obj.get('schema_version', SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
      raise TrajectoryFormatError(
          f'schema_version {version} is not supported (want {SCHEMA_VERSION})'
      )
    for key in ('id', 'task_id', 'question', 'messages'):
      if key not in obj:
        raise TrajectoryFormatError(f'missing field {key!r}')
    try:
      messages = tuple(_turn(m) for m in obj['messages'])
      tokens = obj.get('tokens')
      if tokens is not None:
        tokens = _token_record(tokens)
      segments = tuple(_token_record(t) for t in obj.get('segments') or ())
      return cls(
          id=str(obj['id']),
          task_id=str(obj['task_id']),
          question=str(obj['question']),
          messages=messages,
          final_answer=obj.get('final_answer'),
          status=obj.get('status', 'answered'),
          budgets_hit=tuple(obj.get('budgets_hit', ())),
          error=obj.get('error'),
          tokens=tokens,
          segments=segments,
          timings=dict(obj.get('timings', {})),
          meta=dict(obj.get('meta', {})),
      )
    except (KeyError, TypeError, AttributeError) as e:
      raise TrajectoryFormatError(f'malformed trajectory: {e!r}') from e


def _turn(m: dict[str, Any]) -> Turn:
  if 'role' not in m or 'content' not in m:
    raise TrajectoryFormatError(f'message without role/content: {m!r:.120}')
  calls = tuple(
      ToolCall(
          name=c['name'],
          arguments=dict(c.get('arguments', {})),
          call_id=c.get('call_id', ''),
      )
      for c in m.get('tool_calls', ())
  )
  return Turn(
      role=m['role'],
      content=m['content'],
      reasoning=m.get('reasoning', ''),
      tool_calls=calls,
      invalid=bool(m.get('invalid', False)),
      loss=bool(m.get('loss', True)),
      name=m.get('name', ''),
  )


@dataclasses.dataclass(frozen=True)
class LineError:
  """A line of a JSONL file that could not be read."""

  path: str
  line_no: int
  reason: str


def append_jsonl(path: str | os.PathLike[str], traj: Trajectory) -> None:
  """Appends one trajectory as one line, flushed and fsynced.

  If a killed writer left a torn last line (no trailing newline), the new
  record starts on a fresh line, so only the torn line is unreadable (and
  `iter_jsonl` reports it as a LineError).
  """
  append_line(path, json.dumps(traj.to_json(), ensure_ascii=False))


def write_jsonl(
    path: str | os.PathLike[str], trajs: Iterable[Trajectory]
) -> int:
  """Writes `trajs` as the whole file at `path`, one line each; returns n.

  The lines go to `path`.tmp, fsynced once, then renamed over `path`: a
  reader sees the old file or the complete new one, never part of it (and
  a file of thousands of lines costs one fsync, not one per line).
  """
  tmp = f'{os.fspath(path)}.tmp'
  n = 0
  with open(tmp, 'w', encoding='utf-8') as f:
    for t in trajs:
      f.write(json.dumps(t.to_json(), ensure_ascii=False) + '\n')
      n += 1
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)
  return n


def append_line(path: str | os.PathLike[str], text: str) -> None:
  """Appends `text` and a newline, flushed and fsynced (see append_jsonl).

  A torn last line left by a killed writer is ended first, so `text`
  stands on a line of its own.
  """
  line = text + '\n'
  with open(path, 'ab+') as f:
    if f.seek(0, os.SEEK_END) > 0:
      f.seek(-1, os.SEEK_END)
      if f.read(1) != b'\n':
        line = '\n' + line
    f.write(line.encode('utf-8'))
    f.flush()
    os.fsync(f.fileno())


def parse_json_lines(
    path: str | os.PathLike[str], parse: Callable[[Any], T]
) -> Iterator[tuple[int, T | LineError]]:
  """Yields (line number, parse(object)) or (line number, LineError).

  Lines are decoded one by one, so an invalid byte, a torn line or a record
  `parse` rejects (TrajectoryFormatError) costs only that line. Blank lines
  are skipped.
  """
  with open(path, 'rb') as f:
    for line_no, raw in enumerate(f, 1):
      if not raw.strip():
        continue
      try:
        yield line_no, parse(json.loads(raw.decode('utf-8')))
      except (
          UnicodeDecodeError,
          json.JSONDecodeError,
          TrajectoryFormatError,
      ) as e:
        yield line_no, LineError(str(path), line_no, f'{type(e).__name__}: {e}')


def iter_jsonl(
    path: str | os.PathLike[str], errors: list[LineError] | None = None
) -> Iterator[Trajectory]:
  """Yields trajectories; bad lines go to `errors` (or raise if None)."""
  for line_no, item in parse_json_lines(path, Trajectory.from_json):
    if isinstance(item, LineError):
      if errors is None:
        raise TrajectoryFormatError(f'{path}:{line_no}: {item.reason}')
      errors.append(item)
    else:
      yield item


def _token_record(obj: dict[str, Any]) -> TokenRecord:
  return TokenRecord(
      token_ids=tuple(obj['token_ids']),
      loss_mask=tuple(obj['loss_mask']),
      logprobs=tuple(obj['logprobs']),
      versions=tuple(obj['versions']),
      routed_experts=obj.get('routed_experts'),
  )
