"""Reading trajectories to filter: our JSONL format or chatml, per line.

A line holding `task_id` and `question` is read as our trajectory format
(search_agent.agent.trajectory); any other object as chatml
(search_agent.agent.chatml). Lines that fail are returned as `LineError`s
with the reason, never dropped silently. Tool calls to names outside
`known_tools` mark their assistant turn invalid (context, no loss) and are
counted.
"""

import collections
import dataclasses
import os
from typing import Any, Collection

from search_agent.agent import chatml
from search_agent.agent import trajectory

FORMATS = ('auto', 'trajectory', 'chatml')


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputSummary:
  """What was read.

  Attributes:
    path: The input file.
    lines: Non-empty lines read.
    by_format: Trajectories read per format.
    line_errors: Lines that could not be read, with reasons.
    tool_calls: Tool calls per tool name.
    unknown_tool_calls: Calls to names outside the known tools, per name.
    parse_errors: Problems found in assistant turns, per kind; turns with a
      tool-call kind are invalid ('unknown_tool' includes those found here).
  """

  path: str
  lines: int
  by_format: dict[str, int]
  line_errors: tuple[trajectory.LineError, ...]
  tool_calls: dict[str, int]
  unknown_tool_calls: dict[str, int]
  parse_errors: dict[str, int]


def parse_line(obj: Any, fmt: str) -> tuple[trajectory.Trajectory, str]:
  """One decoded JSON line -> (trajectory, format used)."""
  if fmt == 'auto':
    ours = isinstance(obj, dict) and 'task_id' in obj and 'question' in obj
    fmt = 'trajectory' if ours else 'chatml'
  if fmt == 'trajectory':
    return trajectory.Trajectory.from_json(obj), fmt
  return chatml.import_chatml_line(obj), fmt


def mark_unknown_tools(
    traj: trajectory.Trajectory, known: Collection[str]
) -> tuple[trajectory.Trajectory, list[str]]:
  """Marks assistant turns calling unknown tools invalid; returns the names."""
  unknown, turns = [], []
  for m in traj.messages:
    bad = [c.name for c in m.tool_calls if c.name not in known]
    if bad and m.role == 'assistant':
      unknown.extend(bad)
      m = dataclasses.replace(m, invalid=True, loss=False)
    turns.append(m)
  if not unknown:
    return traj, []
  return dataclasses.replace(traj, messages=tuple(turns)), unknown


def load_trajectories(
    path: str | os.PathLike[str],
    fmt: str = 'auto',
    known_tools: Collection[str] = (),
) -> tuple[list[trajectory.Trajectory], InputSummary]:
  """Reads every line of `path`; returns trajectories and a summary.

  Args:
    path: Input JSONL.
    fmt: 'auto' (per line), 'trajectory' or 'chatml'.
    known_tools: Tool names the agent had; empty accepts any name.
  """
  if fmt not in FORMATS:
    raise ValueError(f'input format {fmt!r} is not one of {FORMATS}')
  trajs, errors, lines = [], [], 0
  formats, unknown = collections.Counter(), collections.Counter()
  seen_ids = collections.Counter()
  parse = lambda obj: parse_line(obj, fmt)  # pylint: disable=unnecessary-lambda-assignment
  for _, item in trajectory.parse_json_lines(path, parse):
    lines += 1
    if isinstance(item, trajectory.LineError):
      errors.append(item)
      continue
    traj, used = item
    formats[used] += 1
    seen_ids[traj.id] += 1
    if seen_ids[traj.id] > 1:  # Keep ids unique within the run.
      traj = dataclasses.replace(traj, id=f'{traj.id}-{seen_ids[traj.id]-1}')
    if known_tools:
      traj, names = mark_unknown_tools(traj, known_tools)
      unknown.update(names)
    trajs.append(traj)
  return trajs, _summary(path, lines, formats, errors, unknown, trajs)


def _summary(path, lines, formats, errors, unknown, trajs) -> InputSummary:
  calls = collections.Counter(c.name for t in trajs for c in t.tool_calls)
  records = [e for t in trajs for e in t.meta.get('parse_errors', ())]
  kinds = collections.Counter(e.get('kind', '?') for e in records)
  kinds['unknown_tool'] += sum(unknown.values())
  unknown = unknown + collections.Counter(
      e.get('tool') or '?' for e in records if e.get('kind') == 'unknown_tool'
  )
  return InputSummary(
      path=str(path),
      lines=lines,
      by_format=dict(formats),
      line_errors=tuple(errors),
      tool_calls=dict(calls.most_common()),
      unknown_tool_calls=dict(unknown.most_common()),
      parse_errors={k: v for k, v in kinds.most_common() if v},
  )
