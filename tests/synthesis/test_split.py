"""The held-out split shares no evidence page with train."""

import pytest

from search_agent.agent.task import Task
from search_agent.synthesis import split


def _task(i, pages):
  return Task(id=str(i), question=f'q{i}', answer='a', evidence=tuple(pages))


def test_components_stay_whole_and_pages_are_disjoint():
  tasks = [_task(i, [f'p{i}']) for i in range(50)]
  tasks += [_task(100, ['p1', 'x']), _task(101, ['x', 'y']), _task(102, ['y'])]
  train, held = split.split_tasks(tasks, 0.3)
  assert len(train) + len(held) == len(tasks)
  assert not split.shared_pages(train, held)
  assert abs(len(held) - 0.3 * len(tasks)) <= 4
  sides = {t.id: 'h' for t in held} | {t.id: 't' for t in train}
  assert sides['1'] == sides['100'] == sides['101'] == sides['102']


def test_bad_fraction_raises():
  with pytest.raises(ValueError, match='heldout_fraction'):
    split.split_tasks([], 1.0)


def test_three_splits_share_no_page_and_keep_the_held_out_split():
  tasks = [_task(i, [f'p{i}']) for i in range(60)]
  tasks += [_task(100, ['p1', 'x']), _task(101, ['x', 'y']), _task(102, ['y'])]
  tasks += [_task(103, ['p7', 'p8'])]
  train, rl, held = split.split_three(tasks, 0.2, 0.25, seed=3)
  assert sorted(t.id for t in train + rl + held) == sorted(t.id for t in tasks)
  for a, b in ((train, rl), (train, held), (rl, held)):
    assert not split.shared_pages(a, b)
  assert abs(len(rl) - 0.25 * len(tasks)) <= 4
  assert [t.id for t in held] == [
      t.id for t in split.split_tasks(tasks, 0.2, 3)[1]
  ]
  sides = {t.id: 'h' for t in held} | {t.id: 'r' for t in rl}
  sides |= {t.id: 't' for t in train}
  assert sides['1'] == sides['100'] == sides['101'] == sides['102']
  assert sides['7'] == sides['8'] == sides['103']
  assert split.split_three(tasks, 0.2, 0.0, seed=3)[1] == []


def test_bad_rl_fraction_raises():
  with pytest.raises(ValueError, match='rl_fraction'):
    split.split_three([], 0.5, 0.5)
