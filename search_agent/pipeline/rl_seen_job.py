"""The tasks RL trained on, for the in-pool check of the RL stage.

The tasks of the groups the RL run's applied updates consumed (its replay
queue journal), in the order the updates used them, joined to the task file
RL drew from (the one its manifest names, checked by its hash). The pipeline
evaluates the SFT and the RL checkpoints on them
(`eval_rl_seen_sft`, `eval_rl_seen_rl`): whether RL raised pass@1 on the
questions it was rewarded on, the paired check that its rewards, masks,
losses and weight sync compose in the right direction, apart from whether
the gain reaches held-out pages. The binary is `rl_seen.py`.

With `reach` > 0 it also writes two sets of the same file's tasks that RL
did not train on, up to `reach` tasks each (a seeded draw, in file order):
`siblings.jsonl`, other questions about the pages of the tasks RL trained
on (sharing an evidence page with one), and `untouched.jsonl`, questions
sharing no evidence page with them. Scored with both checkpoints
(`eval_rl_siblings_*`, `eval_rl_untouched_*`) they say how far RL's gain
reaches: to the questions it practised, to their pages, to pages SFT fitted
but RL never visited, and (eval_after_rl) to held-out pages.
"""

import json
import os
import random
from typing import Mapping, Sequence

from search_agent import digests
from search_agent.agent import task as task_lib
from search_agent.agent import teacher
from search_agent.pipeline import figures
from search_agent.train.rl import used_rollouts


class SeenError(ValueError):
  """The RL run consumed no group, or one whose task is not in the file."""


def seen_task_ids(rl_workdir: str) -> list[str]:
  """Task ids of the consumed groups' rollouts, first use first."""
  used, update = used_rollouts.consumed_rollouts(rl_workdir)
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
    if (
        path
        and digests.file_sha256(path, missing_ok=True) == recorded['sha256']
    ):
      return path
  raise SeenError(
      f'{manifest}: RL drew from {recorded["path"]}; neither it nor'
      f' {fallback} holds that file now'
  )


def _pages(row: Mapping) -> frozenset[str]:
  """The evidence page titles of a task row."""
  return frozenset(teacher.evidence_path(task_lib.Task.from_json(dict(row))))


def reach_sets(
    rows: Sequence[Mapping], seen: Sequence[str], n: int, seed: int = 0
) -> dict[str, list[Mapping]]:
  """Up to n 'siblings' and n 'untouched' rows of `rows` not in `seen`.

  siblings share an evidence page with a seen task; untouched share none.
  Each is a seeded draw of n, kept in the rows' order.
  """
  seen_ids = set(seen)
  seen_pages = set().union(
      *(_pages(r) for r in rows if str(r['id']) in seen_ids)
  )
  sets: dict[str, list[int]] = {'siblings': [], 'untouched': []}
  for i, r in enumerate(rows):
    if str(r['id']) not in seen_ids:
      shared = _pages(r) & seen_pages
      sets['siblings' if shared else 'untouched'].append(i)
  rng = random.Random(seed)
  return {
      name: [rows[i] for i in sorted(rng.sample(idx, min(n, len(idx))))]
      for name, idx in sets.items()
  }


def _write_rows(path: str, rows: Sequence[Mapping]) -> None:
  tmp = path + '.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    for r in rows:
      f.write(json.dumps(r) + '\n')
  os.replace(tmp, path)


def write(
    rl_workdir: str, tasks_path: str | None, workdir: str, reach: int = 0
) -> dict:
  """Writes workdir/tasks.jsonl and seen.json (with `reach` > 0 also
  siblings.jsonl and untouched.jsonl: `reach_sets`); returns the counts.
  The task file is `drawn_from(rl_workdir, tasks_path)`."""
  tasks_path = drawn_from(rl_workdir, tasks_path)
  ids = seen_task_ids(rl_workdir)
  if not ids:
    raise SeenError(f'{rl_workdir}: no update consumed a group')
  all_rows = figures.read_jsonl(tasks_path)
  rows = {str(r['id']): r for r in all_rows}
  missing = [i for i in ids if i not in rows]
  if missing:
    raise SeenError(
        f'{len(missing)} consumed tasks are not in {tasks_path}, e.g.'
        f' {missing[:3]}'
    )
  os.makedirs(workdir, exist_ok=True)
  _write_rows(os.path.join(workdir, 'tasks.jsonl'), [rows[i] for i in ids])
  counts = {'tasks': len(ids), 'rl_workdir': rl_workdir, 'from': tasks_path}
  if reach > 0:
    for name, kept in reach_sets(all_rows, ids, reach).items():
      _write_rows(os.path.join(workdir, f'{name}.jsonl'), kept)
      counts[name] = len(kept)
  with open(os.path.join(workdir, 'seen.json'), 'w', encoding='utf-8') as f:
    json.dump(counts, f, indent=2)
  return counts
