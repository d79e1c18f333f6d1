"""SFT-RL climbing selection (Iris): rollouts of an RL round back into SFT.

For each query at most one rollout is kept. With p the pass rate of the
query's rollout group, only queries with `min_pass < p < max_pass` are used
(solvable but not yet reliable; the seed leaves the band to config, default
0 < p < 1). Among the successful rollouts with at least `min_tool_turns`
tool-call turns, the shortest is kept (fewest tokens when the trajectory has
a token record, else fewest model-written characters). The depth constraint
filters out lucky or trivial solutions; the shortest-trajectory criterion
discourages unnecessary search. Run `dedup_filter` on the result.
"""

import collections
import dataclasses
from typing import Mapping

from search_agent.agent import trajectory
from search_agent.filtering import degeneration
from search_agent.filtering import selection
from search_agent.filtering import stage_result


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClimbConfig:
  """Selection band and depth.

  Attributes:
    min_pass: Queries need a pass rate strictly above this.
    max_pass: Queries need a pass rate strictly below this.
    min_tool_turns: Depth a successful rollout needs to be selected.
  """

  min_pass: float = 0.0
  max_pass: float = 1.0
  min_tool_turns: int = 2


def length(traj: trajectory.Trajectory) -> int:
  """Tokens of the rollout if recorded, else model-written characters."""
  if traj.tokens is not None:
    return len(traj.tokens.token_ids)
  return len(degeneration.decoded_text(traj))


def climb_select(
    trajs: list[trajectory.Trajectory],
    correct: Mapping[str, bool],
    config: ClimbConfig,
) -> stage_result.StageResult:
  """Keeps at most one rollout per query: the shortest deep success.

  Args:
    trajs: Rollouts of one RL round, grouped by task_id.
    correct: Correctness of every rollout (e.g. the outcome reward y).
    config: The pass-rate band and depth.

  Raises:
    KeyError: a rollout has no correctness entry.
  """
  groups = collections.defaultdict(list)
  for t in trajs:
    groups[t.task_id].append(t)
  verdicts = {}
  for task_id, group in groups.items():
    p = sum(bool(correct[t.id]) for t in group) / len(group)
    if not config.min_pass < p < config.max_pass:
      for t in group:
        verdicts[t.id] = stage_result.removal(
            t, 'outside_pass_band', f'pass rate {p:.2f} of {len(group)}'
        )
      continue
    deep = [
        t
        for t in group
        if correct[t.id]
        and selection.tool_call_turns(t) >= config.min_tool_turns
    ]
    best = min(deep, key=length) if deep else None
    for t in group:
      if t is best:
        verdicts[t.id] = None
      elif not correct[t.id]:
        verdicts[t.id] = stage_result.removal(
            t, 'incorrect', f'pass rate {p:.2f}'
        )
      elif t not in deep:
        verdicts[t.id] = stage_result.removal(
            t,
            'too_few_tool_turns',
            f'{selection.tool_call_turns(t)} < {config.min_tool_turns}',
        )
      else:
        verdicts[t.id] = stage_result.removal(
            t, 'not_shortest', f'length {length(t)} > {length(best)}'
        )
  stats = {
      'queries': len(groups),
      'queries_selected': sum(v is None for v in verdicts.values()),
      'config': dataclasses.asdict(config),
  }
  return stage_result.split(
      'climbing', trajs, [verdicts[t.id] for t in trajs], stats
  )
