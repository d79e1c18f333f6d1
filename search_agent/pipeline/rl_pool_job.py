"""RL's question pool: train tasks the SFT policy can sometimes answer.

A group-relative advantage is zero when every rollout of a group is right
or every one is wrong. Drawn from all train tasks, most groups of a weak
policy are all wrong and carry no gradient. A probe (an `eval.run` of the
SFT checkpoint over some train tasks, the pipeline's `rl_probe` stage) says
which it answered; the pool keeps those it answered, where a group is likely
to hold both outcomes, plus `unsolved_fraction` as many of the probed tasks
it missed (seeded), so RL still sees harder ones. Tasks the probe did not
reach are left out. The binary is `rl_pool.py`.
"""

import json
import os
import random
from typing import Sequence

from search_agent.pipeline import figures


class PoolError(ValueError):
  """The probe leaves too few tasks for RL."""


def probe_outcomes(probe_dir: str) -> dict[str, bool]:
  """task id -> answered correctly (the latest grade; errors are wrong)."""
  path = os.path.join(probe_dir, 'results.jsonl')
  if not os.path.exists(path):
    raise PoolError(f'{path} is missing: run the probe (eval.run) first')
  return figures.eval_outcomes(probe_dir)


def select(
    task_ids: Sequence[str],
    outcomes: dict[str, bool],
    unsolved_fraction: float,
    seed: int = 0,
) -> list[str]:
  """Answered probed tasks plus round(fraction x answered) missed ones."""
  if unsolved_fraction < 0:
    raise PoolError(f'unsolved_fraction must be >= 0, got {unsolved_fraction}')
  solved = [t for t in task_ids if outcomes.get(t) is True]
  missed = [t for t in task_ids if outcomes.get(t) is False]
  n = min(len(missed), round(unsolved_fraction * len(solved)))
  drawn = set(random.Random(seed).sample(missed, n))
  keep = set(solved) | drawn
  return [t for t in task_ids if t in keep]


def build(
    tasks_path: str,
    probe_dir: str,
    out_dir: str,
    unsolved_fraction: float,
    min_tasks: int,
    seed: int = 0,
) -> dict[str, int]:
  """Writes out_dir/tasks.jsonl (the task file's lines, in order) and
  out_dir/pool.json; returns the counts."""
  with open(tasks_path, encoding='utf-8') as f:
    lines = [l if l.endswith('\n') else l + '\n' for l in f if l.strip()]
  ids = [str(json.loads(l)['id']) for l in lines]
  outcomes = probe_outcomes(probe_dir)
  unknown = sorted(set(outcomes) - set(ids))
  if unknown:
    raise PoolError(
        f'the probe graded {len(unknown)} tasks not in {tasks_path}'
        f' (first: {unknown[0]}): probe the same task file'
    )
  kept = set(select(ids, outcomes, unsolved_fraction, seed))
  solved = sum(outcomes.values())
  if len(kept) < min_tasks:
    raise PoolError(
        f'the probe answered {solved} of {len(outcomes)} tasks, so the pool'
        f' holds {len(kept)} (< min_tasks={min_tasks}): probe more tasks,'
        ' raise unsolved_fraction, or run RL on every train task'
    )
  os.makedirs(out_dir, exist_ok=True)
  with open(os.path.join(out_dir, 'tasks.jsonl'), 'w', encoding='utf-8') as f:
    f.writelines(l for l, i in zip(lines, ids) if i in kept)
  counts = {
      'probed': len(outcomes),
      'answered': solved,
      'kept': len(kept),
      'kept_answered': sum(outcomes[t] for t in kept),
  }
  with open(os.path.join(out_dir, 'pool.json'), 'w') as f:
    json.dump(counts, f)
  return counts
