"""The tasks RL trained on, for the in-pool check of the RL stage.

The tasks of the groups the RL run's applied updates consumed (its replay
queue journal), in the order the updates used them, joined to the task file
RL drew from (the one its manifest names, checked by its hash). The pipeline
evaluates the SFT and the RL checkpoints on them
(`eval_rl_seen_sft`, `eval_rl_seen_rl`): whether RL raised pass@1 on the
questions it was rewarded on, the paired check that its rewards, masks,
losses and weight sync compose in the right direction, apart from whether
the gain reaches held-out pages. The binary is `make_rl_seen.py`.
"""

import json
import os

from search_agent.pipeline import figures
from search_agent.pipeline import stages as stages_lib
from search_agent.train.rl import climbing_handoff


class SeenError(ValueError):
  """The RL run consumed no group, or one whose task is not in the file."""


def seen_task_ids(rl_workdir: str) -> list[str]:
  """Task ids of the consumed groups' rollouts, first use first."""
  used, update = climbing_handoff.consumed_rollouts(rl_workdir)
  order = sorted(used, key=lambda t: (update[t.meta['group_id']], t.id))
  return list(dict.fromkeys(t.task_id for t in order))


def drawn_from(rl_workdir: str, fallback: str | None = None) -> str:
  """The task file the RL run drew from: the one its manifest.json names,
  else `fallback` if it holds the content the manifest hashed (a run
  directory moved since); with no manifest, `fallback`.

  Raises:
    SeenError: neither file holds the recorded content, or neither is known.
  """
  manifest = os.path.join(rl_workdir, 'manifest.json')
  try:
    with open(manifest, encoding='utf-8') as f:
      recorded = json.load(f)['tasks']
  except FileNotFoundError:
    if fallback:
      return fallback
    raise SeenError(f'{rl_workdir}: no manifest.json and no task file given')
  except (ValueError, KeyError) as e:
    raise SeenError(f'{manifest}: no task file recorded ({e})') from e
  for path in (recorded['path'], fallback):
    if path and stages_lib.file_sha256(path) == recorded['sha256']:
      return path
  raise SeenError(
      f'{manifest}: RL drew from {recorded["path"]}; neither it nor'
      f' {fallback} holds that file now'
  )


def write(rl_workdir: str, tasks_path: str | None, workdir: str) -> dict:
  """Writes workdir/tasks.jsonl and seen.json; returns the counts. The
  task file is `drawn_from(rl_workdir, tasks_path)`."""
  tasks_path = drawn_from(rl_workdir, tasks_path)
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
