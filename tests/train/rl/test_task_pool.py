"""The task pool: seeded passes, the second-pass rule, resumable state."""

import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import task_pool

TASKS = [task_lib.Task(id=f't{i}', question='q', answer='a') for i in range(5)]


def _group(task_id, correct, coverage):
  tok = traj_lib.TokenRecord(
      token_ids=(1,), loss_mask=(1,), logprobs=(0.0,), versions=(0,)
  )
  t = rollout_groups.ScoredTrajectory(
      trajectory_id='x', segments=(tok,), reward=0.0, correct=correct,
      coverage=coverage,
  )  # fmt: skip
  return rollout_groups.RolloutGroup(
      group_id=f'{task_id}@0', task_id=task_id, dispatch_batch=0,
      trajectories=(t, t),
  )  # fmt: skip


def test_each_pass_visits_every_task_once_in_a_seeded_order():
  pool = task_pool.TaskPool(TASKS, seed=3)
  first = [pool.next() for _ in range(5)]
  assert sorted(t.id for t, _ in first) == [t.id for t in TASKS]
  assert {p for _, p in first} == {0}
  again = task_pool.TaskPool(TASKS, seed=3)
  assert [again.next()[0].id for _ in range(5)] == [t.id for t, _ in first]


def test_second_pass_skips_only_fully_solved_questions():
  pool = task_pool.TaskPool(TASKS, seed=0)
  for _ in range(5):
    t, p = pool.next()
    solved = t.id == 't1'
    pool.record(_group(t.id, 1.0, 1.0 if solved else 0.5), p)
  pool.record(_group('t2', 1.0, 1.0), 1)  # a later pass never counts
  second = [pool.next() for _ in range(4)]
  assert sorted(t.id for t, _ in second) == ['t0', 't2', 't3', 't4']
  assert {p for _, p in second} == {1}


def test_state_round_trip_and_exhaustion():
  pool = task_pool.TaskPool(TASKS[:2], seed=0)
  t, p = pool.next()
  pool.record(_group(t.id, 1.0, 1.0), p)
  restored = task_pool.TaskPool(TASKS[:2], seed=0)
  restored.load_state(pool.to_state())
  assert restored.next() == pool.next()
  t2, _ = restored.next()  # pass 1: only the unsolved task is left
  assert t2.id != t.id
  restored.record(_group(t2.id, 1.0, 1.0), 0)
  with pytest.raises(task_pool.TaskPoolExhausted):
    restored.next()
