"""Which files of a directory the viewer can read, found by their content.

Workdirs of different binaries (eval.run, filtering.run, synthesis, the RL
loop) and of different versions hold different files; the viewer looks at
the first record of each JSON/JSONL file and files it under a kind:

  trajectories  lines with `messages` (or an encrypted line: `encrypted`
                with `task_id`)
  results       eval result records (`traj_id` with `correct`)
  decisions     filter or synthesis decisions (`outcome` or `decision`)
  tasks         Task records (`question` and `answer`, no `messages`)
  groups        scored rollout groups (`group_id` with `trajectories`), also
                in `groups/` and an RL run's replay queue `queue/groups/`
  consumed      the replay queue's journal (`update` with its `groups`)
  metrics       per-step numbers (`step` or `update` and numeric fields)
  report, manifest, funnel   the JSON files of those names
  json          any other small JSON object beside them (parity.json, ...)

A directory with none of these is no run. Files that do not parse are
listed, never fatal.
"""

import dataclasses
import json
import pathlib
from typing import Any

KINDS = ('trajectories', 'results', 'decisions', 'tasks', 'groups', 'metrics')
# Directories that hold a run's machinery, not runs of their own.
_NOT_RUNS = ('groups', 'queue', 'checkpoints', 'weights', 'tb', 'index',
             'llm_cache', 'work', 'leased', 'tmp')  # fmt: skip
_MAX_JSON_BYTES = 256 << 10
_NAMED = {
    'report.json': 'report',
    'manifest.json': 'manifest',
    'funnel.json': 'funnel',
}
_MAX_DEPTH = 3


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFiles:
  """The readable files of one directory, by kind."""

  path: pathlib.Path
  files: dict[str, list[pathlib.Path]]
  unreadable: list[str]

  def get(self, kind: str) -> list[pathlib.Path]:
    return self.files.get(kind, [])


def first_record(path: pathlib.Path) -> Any:
  """The first JSON value of a JSONL file (None if there is none)."""
  with open(path, 'rb') as f:
    for raw in f:
      if raw.strip():
        return json.loads(raw)
  return None


def classify(obj: Any) -> str | None:
  """The kind of a record, or None."""
  if not isinstance(obj, dict):
    return None
  if 'messages' in obj or ('encrypted' in obj and 'task_id' in obj):
    return 'trajectories'
  if 'group_id' in obj and 'trajectories' in obj:
    return 'groups'
  if 'traj_id' in obj and 'correct' in obj:
    return 'results'
  if 'outcome' in obj or 'decision' in obj:
    return 'decisions'
  if 'question' in obj and 'answer' in obj:
    return 'tasks'
  if 'update' in obj and isinstance(obj.get('groups'), list):
    return 'consumed'
  if ('step' in obj or 'update' in obj) and any(
      isinstance(v, (int, float)) for v in obj.values()
  ):
    return 'metrics'
  return None


def scan(path: pathlib.Path) -> RunFiles:
  """Classifies the files directly inside `path` (and its `groups/`)."""
  files: dict[str, list[pathlib.Path]] = {}
  unreadable = []
  candidates = sorted(path.glob('*.jsonl')) + sorted(path.glob('*.json'))
  for sub in ('groups', 'queue/groups', 'queue'):
    candidates += sorted((path / sub).glob('*.json*'))
  for f in candidates:
    if f.name in _NAMED and f.parent == path:
      files.setdefault(_NAMED[f.name], []).append(f)
      continue
    try:
      if f.suffix == '.jsonl':
        kind = classify(first_record(f))
      elif f.stat().st_size > _MAX_JSON_BYTES:
        continue
      else:
        obj = _load(f)
        kind = classify(obj) or (
            'json' if isinstance(obj, dict) and f.parent == path else None
        )
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
      unreadable.append(f'{f.name}: {type(e).__name__}')
      continue
    if kind:
      files.setdefault(kind, []).append(f)
  return RunFiles(path=path, files=files, unreadable=unreadable)


def _load(path: pathlib.Path) -> Any:
  return json.loads(path.read_text(encoding='utf-8'))


def is_run(rf: RunFiles) -> bool:
  return any(rf.get(k) for k in KINDS)


def find_runs(workdir: pathlib.Path) -> list[RunFiles]:
  """`workdir` itself and every directory below it (depth <= 3) with data."""
  out = []
  todo = [(workdir, 0)]
  while todo:
    d, depth = todo.pop(0)
    rf = scan(d)
    if is_run(rf):
      out.append(rf)
    if depth < _MAX_DEPTH:
      subs = [
          s
          for s in sorted(d.iterdir())
          if s.is_dir() and s.name not in _NOT_RUNS
      ]
      todo += [(s, depth + 1) for s in subs if not s.name.startswith('.')]
  return out
