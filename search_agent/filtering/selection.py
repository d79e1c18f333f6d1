"""Coarse selection: rollouts per task, tool-use depth, exact dedup.

- `rollout_cap`: the open recipe collects three teacher rollouts per task;
  extra rollouts of a task (in input order) are set aside.
- `min_tool_turns_filter`: Iris keeps only trajectories with at least N
  tool-call turns, discarding shallow cases a direct lookup could resolve;
  the open recipe asks for real tool use (N = 1). A tool-call turn is an
  assistant turn with at least one tool call that parsed and validated.
- `dedup_filter`: exact duplicates over the full message sequence are
  dropped; distinct rollouts of the same question are all kept.
- `mask_failed_turns`: failed (invalid) tool-call turns stay as context with
  loss=False, so the corrected action is supervised with the failure and its
  error feedback visible.
"""

import collections
import dataclasses
import hashlib
import json

from search_agent.agent import trajectory
from search_agent.filtering import stage_result


def tool_call_turns(traj: trajectory.Trajectory) -> int:
  """Assistant turns holding at least one valid tool call."""
  return sum(
      1
      for m in traj.messages
      if m.role == 'assistant' and m.tool_calls and not m.invalid
  )


def rollout_cap(
    trajs: list[trajectory.Trajectory], per_task: int
) -> stage_result.StageResult:
  """Keeps the first `per_task` rollouts of every task (0 keeps all)."""
  seen = collections.Counter()
  verdicts = []
  for traj in trajs:
    seen[traj.task_id] += 1
    if per_task and seen[traj.task_id] > per_task:
      verdicts.append(
          stage_result.removal(
              traj,
              'over_rollout_cap',
              f'rollout {seen[traj.task_id]} of task {traj.task_id}'
              f' (cap {per_task})',
          )
      )
    else:
      verdicts.append(None)
  per = collections.Counter(seen.values())
  stats = {
      'tasks': len(seen),
      'tasks_by_rollout_count': {str(k): per[k] for k in sorted(per)},
      'per_task': per_task,
  }
  return stage_result.split('rollout_cap', trajs, verdicts, stats)


def min_tool_turns_filter(
    trajs: list[trajectory.Trajectory], min_turns: int
) -> stage_result.StageResult:
  """Removes trajectories with fewer than `min_turns` tool-call turns."""
  counts = [tool_call_turns(t) for t in trajs]
  verdicts = [
      None
      if n >= min_turns
      else stage_result.removal(
          t, 'too_few_tool_turns', f'{n} tool-call turn(s) < {min_turns}'
      )
      for t, n in zip(trajs, counts)
  ]
  hist = collections.Counter(counts)
  stats = {
      'min_tool_turns': min_turns,
      'tool_turns_histogram': {str(k): hist[k] for k in sorted(hist)},
  }
  return stage_result.split('min_tool_turns', trajs, verdicts, stats)


def message_key(traj: trajectory.Trajectory) -> str:
  """SHA-256 of the full message sequence (roles, text, calls, names)."""
  messages = [
      [
          m.role,
          m.content,
          m.reasoning,
          [[c.name, c.arguments] for c in m.tool_calls],
          m.name,
      ]
      for m in traj.messages
  ]
  data = json.dumps(messages, sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(data.encode('utf-8')).hexdigest()


def dedup_filter(
    trajs: list[trajectory.Trajectory],
) -> stage_result.StageResult:
  """Drops byte-identical message sequences, keeping the first of each."""
  first: dict[str, str] = {}
  verdicts = []
  for traj in trajs:
    key = message_key(traj)
    if key in first:
      verdicts.append(
          stage_result.removal(
              traj, 'duplicate', f'same messages as {first[key]}'
          )
      )
    else:
      first[key] = traj.id
      verdicts.append(None)
  result = stage_result.split('dedup', trajs, verdicts)
  per_task = collections.Counter(t.task_id for t in result.kept)
  stats = {
      'distinct_sequences': len(first),
      'tasks_kept': len(per_task),
      'tasks_with_several_rollouts': sum(1 for n in per_task.values() if n > 1),
  }
  return dataclasses.replace(result, stats=stats)


def mask_failed_turns(
    trajs: list[trajectory.Trajectory],
) -> stage_result.StageResult:
  """Sets loss=False on invalid assistant turns; keeps every trajectory."""
  out, masked = [], 0
  for traj in trajs:
    turns = []
    for m in traj.messages:
      if m.role == 'assistant' and m.invalid and m.loss:
        m = dataclasses.replace(m, loss=False)
        masked += 1
      turns.append(m)
    out.append(dataclasses.replace(traj, messages=tuple(turns)))
  with_failed = sum(
      any(m.invalid for m in t.messages if m.role == 'assistant') for t in out
  )
  stats = {
      'failed_turns_masked': masked,
      'trajectories_with_failed_turns': with_failed,
  }
  return stage_result.StageResult(
      name='failed_turns', kept=tuple(out), stats=stats
  )
