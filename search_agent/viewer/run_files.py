"""Reading a run's files into plain JSON objects, tolerantly and in memory.

Torn or unreadable lines are counted, never fatal. Encrypted trajectory lines
(`evaluation/results.py`) are decrypted in memory only when the canary is
given; without it they stay placeholders that show ids, labels and numbers only.
Nothing here writes a file.
"""

import json
import pathlib
from typing import Any, Iterator

from search_agent.agent import chatml
from search_agent.agent import trajectory
from search_agent.evaluation import decryption

Json = dict[str, Any]
ENCRYPTED_QUESTION = '(encrypted: pass --canary to read it in memory)'


class ViewerError(ValueError):
  """The viewer cannot do what it was asked; the message says what to do."""


def json_lines(path: pathlib.Path, errors: list[str]) -> Iterator[Any]:
  """Objects of a JSONL file; unreadable lines go to `errors`."""
  for _, obj in trajectory.parse_json_lines(path, lambda o: o):
    if isinstance(obj, trajectory.LineError):
      errors.append(f'{path.name}:{obj.line_no}: {obj.reason[:120]}')
    else:
      yield obj


def decrypt_line(obj: Json, canary: str | None) -> Json:
  """A trajectory object, decrypted in memory when it is encrypted.

  Without a canary (or with the wrong one) the result is a placeholder:
  `{id, task_id, status, encrypted: True, question: ENCRYPTED_QUESTION}`.
  """
  if 'encrypted' not in obj:
    return obj
  stub = {
      'id': str(obj.get('id', '')),
      'task_id': str(obj.get('task_id', '')),
      'status': obj.get('status', ''),
      'question': ENCRYPTED_QUESTION,
      'messages': [],
      'encrypted': True,
  }
  if not canary:
    return stub
  try:
    plain = json.loads(decryption.browsecomp_decrypt(obj['encrypted'], canary))
  except (decryption.DecryptionError, json.JSONDecodeError):
    return {
        **stub,
        'question': '(encrypted: the canary given does not decrypt it)',
    }
  return {**plain, 'decrypted': True}


def latest_by(objs, key: str) -> dict[str, Json]:
  """The last object per `key` (later lines supersede earlier ones)."""
  out: dict[str, Json] = {}
  for o in objs:
    if isinstance(o, dict) and key in o:
      out[str(o[key])] = o
  return out


def read_json(path: pathlib.Path, errors: list[str]) -> Any:
  try:
    return json.loads(path.read_text(encoding='utf-8'))
  except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
    errors.append(f'{path.name}: {type(e).__name__}: {e}'[:200])
    return None


def _ours(obj: Any, where: str, errors: list[str]) -> Json | None:
  """A line in our format; chatml lines are imported (agent/chatml.py)."""
  if not isinstance(obj, dict):
    return None
  if 'task_id' in obj or 'encrypted' in obj:
    return obj
  try:
    return chatml.import_chatml_line(obj).to_json()
  except trajectory.TrajectoryFormatError as e:
    errors.append(f'{where}: not a trajectory: {e}'[:200])
    return None


def trajectories(
    paths, canary: str | None, errors: list[str]
) -> dict[str, Json]:
  """Latest trajectory per id over `paths`, in first-seen order."""
  out: dict[str, Json] = {}
  for p in paths:
    for k, obj in enumerate(json_lines(p, errors)):
      obj = _ours(obj, f'{p.name} record {k + 1}', errors)
      if obj is not None and 'id' in obj:
        out[str(obj['id'])] = decrypt_line(obj, canary)
  return out


def tasks(paths, errors: list[str]) -> dict[str, Json]:
  """Task objects by id; each remembers its file's split (tasks.<split>.jsonl)."""
  out: dict[str, Json] = {}
  for p in paths:
    parts = p.name.split('.')
    split = parts[1] if len(parts) > 2 else ''
    for obj in json_lines(p, errors):
      if isinstance(obj, dict) and 'id' in obj:
        out[str(obj['id'])] = {**obj, '_split': split, '_file': p.name}
  return out
