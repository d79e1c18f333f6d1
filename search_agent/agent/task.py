"""The task record (format version 1): a question with its verification data."""

import dataclasses
import json
import os
from typing import Any, Iterator


class TaskFormatError(ValueError):
  """A task line is malformed; the message names the field."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Claim:
  """A factual claim (subject, relation, object) with its source passage."""

  subject: str
  relation: str
  object: str
  source: str = ''


@dataclasses.dataclass(frozen=True, kw_only=True)
class Task:
  """A search task.

  Attributes:
    id: Unique id.
    question: What the agent is asked.
    answer: Private reference answer (never shown to the policy).
    aliases: Other accepted surface forms of the answer.
    evidence: Supporting doc ids or titles.
    claims: Claims supporting the answer (required claims for RL rewards).
    meta: Provenance and anything else.
  """

  id: str
  question: str
  answer: str
  aliases: tuple[str, ...] = ()
  evidence: tuple[str, ...] = ()
  claims: tuple[Claim, ...] = ()
  meta: dict[str, Any] = dataclasses.field(default_factory=dict)

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'Task':
    for key in ('id', 'question', 'answer'):
      if key not in obj:
        raise TaskFormatError(f'task is missing field {key!r}: {obj!r:.120}')
    try:
      claims = tuple(Claim(**c) for c in obj.get('claims', ()))
    except TypeError as e:
      raise TaskFormatError(f'task {obj["id"]}: bad claim: {e}') from e
    return cls(
        id=str(obj['id']),
        question=str(obj['question']),
        answer=str(obj['answer']),
        aliases=tuple(obj.get('aliases', ())),
        evidence=tuple(obj.get('evidence', ())),
        claims=claims,
        meta=dict(obj.get('meta', {})),
    )


def iter_tasks(path: str | os.PathLike[str]) -> Iterator[Task]:
  """Reads task JSONL; raises TaskFormatError with the line number."""
  with open(path, encoding='utf-8') as f:
    for line_no, line in enumerate(f, 1):
      if not line.strip():
        continue
      try:
        yield Task.from_json(json.loads(line))
      except (json.JSONDecodeError, TaskFormatError) as e:
        raise TaskFormatError(f'{path}:{line_no}: {e}') from e
