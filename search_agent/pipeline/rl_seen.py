"""The tasks RL trained on, for the in-pool check of the RL stage.

The tasks of the groups the RL run's applied updates consumed (its replay
queue journal), in the order the updates used them, joined to the task file
RL drew from. The pipeline evaluates the SFT and the RL checkpoints on them
(`eval_rl_seen_sft`, `eval_rl_seen_rl`): whether RL raised pass@1 on the
questions it was rewarded on, the paired check that its rewards, masks,
losses and weight sync compose in the right direction, apart from whether
the gain reaches held-out pages. The binary is `make_rl_seen.py`.
"""

import json
import os

from search_agent.pipeline import figures
from search_agent.train.rl import climbing_handoff


class SeenError(ValueError):
  """The RL run consumed no group, or one whose task is not in the file."""


def seen_task_ids(rl_workdir: str) -> list[str]:
  """Task ids of the consumed groups' rollouts, first use first."""
  used, update = climbing_handoff.consumed_rollouts(rl_workdir)
  order = sorted(used, key=lambda t: (update[t.meta['group_id']], t.id))
  return list(dict.fromkeys(t.task_id for t in order))


def write(rl_workdir: str, tasks_path: str, workdir: str) -> dict:
  """Writes workdir/tasks.jsonl and seen.json; returns the counts."""
  ids = seen_task_ids(rl_workdir)
  if not ids:
    raise SeenError(f'{rl_workdir}: no update consumed a group')
  rows = {str(r['id']): r for r in figures.read_jsonl(tasks_path)}
  missing = [i for i in ids if i not in rows]
  if missing:
    raise SeenError(
        f'{len(missing)} consumed tasks are not in {tasks_path}, e.g.'
        f' {missing[:3]}'
    )
  os.makedirs(workdir, exist_ok=True)
  tmp = os.path.join(workdir, 'tasks.jsonl.tmp')
  with open(tmp, 'w', encoding='utf-8') as f:
    for i in ids:
      f.write(json.dumps(rows[i]) + '\n')
  os.replace(tmp, os.path.join(workdir, 'tasks.jsonl'))
  counts = {'tasks': len(ids), 'rl_workdir': rl_workdir, 'from': tasks_path}
  with open(os.path.join(workdir, 'seen.json'), 'w', encoding='utf-8') as f:
    json.dump(counts, f, indent=2)
  return counts
