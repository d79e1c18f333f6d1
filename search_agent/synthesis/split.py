"""Train / RL / held-out splits with no evidence page shared between them.

Tasks are joined into components by shared evidence pages (union-find);
whole components go to the held-out split, smallest-hash first, until it
holds `heldout_fraction` of the tasks (a component larger than the room
left is skipped), so every task keeps its split and none is dropped. One-
page tasks (most 1-hop ones) are singleton components unless they share
a page, so the held-out split is rich in 1-hop tasks. `split_three` then
fills the RL split (the recipe's new question pool for RL, pages unseen in
SFT's demonstrations) from the components left, in the same order, to
`rl_fraction`; the held-out split is the one `split_tasks` gives.

Held-out phrasings: `heldout_phrasings` picks, per relation, the question
frames (synthesis/phrasings.py) no task is generated in, so no training task
uses one (`check_no_heldout_phrasing`). `asked_in_heldout_phrasings` asks
the held-out tasks again in them: a fourth set, evaluated only, on the same
pages and answers as the held-out split, so each task is paired with itself
in a trained phrasing.
"""

import hashlib
from typing import Collection, Mapping, Sequence

from search_agent.agent.task import Task
from search_agent.synthesis import phrasings
from search_agent.synthesis import tasks as tasks_lib


class PhrasingLeakError(ValueError):
  """A task meant for training is asked in a held-out phrasing."""


class _UnionFind:

  def __init__(self):
    self.parent: dict[str, str] = {}

  def find(self, x: str) -> str:
    self.parent.setdefault(x, x)
    while self.parent[x] != x:
      self.parent[x] = self.parent[self.parent[x]]
      x = self.parent[x]
    return x

  def union(self, a: str, b: str) -> None:
    ra, rb = self.find(a), self.find(b)
    if ra != rb:
      self.parent[max(ra, rb)] = min(ra, rb)


def split_tasks(
    tasks: Sequence[Task], heldout_fraction: float, seed: int = 0
) -> tuple[list[Task], list[Task]]:
  """(train, heldout), each in input order; evidence pages disjoint."""
  train, _, held = split_three(tasks, heldout_fraction, 0.0, seed)
  return train, held


def split_three(
    tasks: Sequence[Task],
    heldout_fraction: float,
    rl_fraction: float,
    seed: int = 0,
) -> tuple[list[Task], list[Task], list[Task]]:
  """(train, rl, heldout), each in input order; pages pairwise disjoint."""
  if not 0.0 <= heldout_fraction < 1.0:
    raise ValueError(f'heldout_fraction must be in [0, 1): {heldout_fraction}')
  if not 0.0 <= rl_fraction < 1.0 - heldout_fraction:
    raise ValueError(
        f'rl_fraction must be in [0, 1 - heldout_fraction): {rl_fraction}'
        f' with heldout_fraction {heldout_fraction}'
    )
  uf = _UnionFind()
  for t in tasks:
    pages = list(t.evidence)
    for p in pages[1:]:
      uf.union(pages[0], p)
  members: dict[str, list[int]] = {}
  for i, t in enumerate(tasks):
    members.setdefault(uf.find(t.evidence[0]), []).append(i)

  def order(root: str) -> str:
    return hashlib.sha1(f'{seed}|{root}'.encode()).hexdigest()

  roots = sorted(members, key=order)
  side: dict[int, str] = {}
  for name, fraction in (('heldout', heldout_fraction), ('rl', rl_fraction)):
    room = int(round(fraction * len(tasks)))
    for root in roots:
      if room == 0:
        break
      ids = members[root]
      if ids[0] not in side and len(ids) <= room:
        side.update((i, name) for i in ids)
        room -= len(ids)
  out = {'train': [], 'rl': [], 'heldout': []}
  for i, t in enumerate(tasks):
    out[side.get(i, 'train')].append(t)
  return out['train'], out['rl'], out['heldout']


def shared_pages(a: Sequence[Task], b: Sequence[Task]) -> set[str]:
  """Evidence pages present in both splits (empty for a valid split)."""
  return {p for t in a for p in t.evidence} & {p for t in b for p in t.evidence}


def heldout_phrasings(
    ids_by_relation: Mapping[str, Sequence[str]], per_relation: int, seed: int
) -> frozenset[str]:
  """The `per_relation` phrasing ids of each relation kept out of training,
  those of smallest seeded hash; every relation keeps one to train on."""
  if per_relation < 0:
    raise ValueError(f'heldout_phrasings must be >= 0: {per_relation}')

  def order(pid: str) -> str:
    return hashlib.sha1(f'{seed}|{pid}'.encode()).hexdigest()

  out = set()
  for relation, ids in ids_by_relation.items():
    if per_relation >= len(ids):
      raise ValueError(
          f'heldout_phrasings={per_relation} leaves relation {relation!r} no'
          f' phrasing to train on (it has {len(ids)}): hold out fewer'
      )
    out.update(sorted(ids, key=order)[:per_relation])
  return frozenset(out)


def asked_in_heldout_phrasings(
    tasks: Sequence[Task], heldout: Collection[str]
) -> list[Task]:
  """Each task with a phrasing whose relation has one in `heldout`, asked
  again in one of those (chosen by a hash of its id), in input order."""
  out = []
  for t in tasks:
    phrasing = t.meta.get('phrasing')
    if not phrasing:
      continue
    relation = t.meta['relations'][-1]
    candidates = {p for p in heldout if p.rpartition('/')[0] == relation}
    if candidates:
      trained = set(phrasings.ids()[relation]) - candidates
      chosen = phrasings.choose(relation, t.id, excluded=trained)
      out.append(tasks_lib.ask_again(t, chosen))
  return out


def check_no_heldout_phrasing(
    tasks: Sequence[Task], heldout: Collection[str]
) -> None:
  """Raises PhrasingLeakError when a task is asked in a held-out phrasing."""
  leaked = [t.id for t in tasks if t.meta.get('phrasing') in heldout]
  if leaked:
    raise PhrasingLeakError(
        f'{len(leaked)} tasks (e.g. {leaked[0]}) are asked in a held-out'
        f' phrasing ({sorted(heldout)}): the journal was written with other'
        ' held-out phrasings or seed; synthesise into a fresh workdir'
    )
