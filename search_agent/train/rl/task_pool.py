"""The question pool of an RL run: seeded passes and the second-pass rule.

Open recipe, "Task Sampling": the pool is visited pass by pass in a seeded
order; a question is skipped on later passes only if every rollout of its
first-pass group was correct with full claim coverage
(`advantages.needs_second_pass`). The position is part of the learner's
state, so a resumed run dispatches the same questions in the same order.
"""

import random
from typing import Any, Sequence

from search_agent.agent import task as task_lib
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import rollout_groups


class TaskPoolExhausted(RuntimeError):
  """Every question is solved: nothing is left to dispatch."""


class TaskPool:
  """Hands out tasks pass by pass; remembers first-pass solves."""

  def __init__(self, tasks: Sequence[task_lib.Task], seed: int = 0):
    if not tasks:
      raise ValueError('the task pool is empty')
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
      raise ValueError('task ids must be unique')
    self.tasks = {t.id: t for t in tasks}
    self._ids = ids
    self.seed = seed
    self.pass_index, self.position = 0, 0
    self.solved: set[str] = set()

  def _order(self, p: int) -> list[str]:
    order = list(self._ids)
    random.Random(self.seed * 1_000_003 + p).shuffle(order)
    return order

  def next(self) -> tuple[task_lib.Task, int]:
    """(next task, its pass index)."""
    skipped = 0
    while True:
      order = self._order(self.pass_index)
      if self.position >= len(order):
        self.pass_index, self.position = self.pass_index + 1, 0
        continue
      tid = order[self.position]
      self.position += 1
      if self.pass_index > 0 and tid in self.solved:
        skipped += 1
        if skipped > len(order):
          raise TaskPoolExhausted('every question was solved in pass one')
        continue
      return self.tasks[tid], self.pass_index

  def record(self, group: rollout_groups.RolloutGroup, pass_index: int) -> None:
    """Notes a first-pass group that needs no second pass."""
    if pass_index == 0 and group.trajectories:
      if not adv_lib.needs_second_pass(group):
        self.solved.add(group.task_id)

  def to_state(self) -> dict[str, Any]:
    return {
        'pass': self.pass_index,
        'position': self.position,
        'solved': sorted(self.solved),
    }

  def load_state(self, state: dict[str, Any]) -> None:
    self.pass_index, self.position = state['pass'], state['position']
    self.solved = set(state['solved'])
