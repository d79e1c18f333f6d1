"""The held-out split shares no evidence page with train."""

import pytest

from search_agent.agent.task import Task
from search_agent.synthesis import config as config_lib
from search_agent.synthesis import phrasings
from search_agent.synthesis import split
from tpu_configs import synthesis as synthesis_config


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


def _phrased(i, pages, phrasing):
  relation = phrasing.rpartition('/')[0] if phrasing else 'director'
  return Task(
      id=str(i), question=f'q{i}', answer='a', evidence=tuple(pages),
      meta={'phrasing': phrasing, 'relations': ['father', relation],
            'generator_meta': {'start_phrase': f'Person {i}'}},
  )  # fmt: skip


def test_held_out_phrasings_are_per_relation_seeded_and_leave_one():
  ids = phrasings.ids()
  held = split.heldout_phrasings(ids, 1, seed=0)
  assert len(held) == len(ids)
  for relation, rel_ids in ids.items():
    assert len(held & set(rel_ids)) == 1, relation
  assert held == split.heldout_phrasings(ids, 1, seed=0)
  assert held != split.heldout_phrasings(ids, 1, seed=1)
  assert split.heldout_phrasings(ids, 0, seed=0) == frozenset()
  with pytest.raises(ValueError, match='no phrasing to train on'):
    split.heldout_phrasings(ids, 4, seed=0)  # father has 4 frames


def test_held_out_tasks_are_asked_again_in_held_out_phrasings_only():
  held = split.heldout_phrasings(phrasings.ids(), 2, seed=5)
  trained = [p for r in phrasings.ids().values() for p in r if p not in held]
  tasks = [_phrased(i, [f'p{i}'], trained[i % len(trained)]) for i in range(60)]
  tasks.append(_phrased(60, ['p60'], None))  # an LLM's question
  split.check_no_heldout_phrasing(tasks, held)
  again = split.asked_in_heldout_phrasings(tasks, held)
  assert len(again) == 60  # every template task, none of the LLM's
  for t, a in zip(tasks, again):
    assert a.meta['phrasing'] in held
    assert a.meta['relations'] == t.meta['relations']
    assert a.meta['phrasing'].startswith(t.meta['relations'][-1] + '/')
    assert (a.meta['rephrases'], a.answer, a.evidence) == (
        t.id,
        'a',
        t.evidence,
    )
    assert a.id != t.id and a.question != t.question
    assert a.question.startswith(a.question[0].upper())
    assert 'the father of Person' in a.question
  assert len({a.meta['phrasing'] for a in again}) > len(phrasings.FRAMES)
  assert split.asked_in_heldout_phrasings(tasks, frozenset()) == []


def test_a_task_in_a_held_out_phrasing_stops_the_split():
  held = split.heldout_phrasings(phrasings.ids(), 1, seed=0)
  leaked = _phrased(1, ['p1'], sorted(held)[0])
  with pytest.raises(split.PhrasingLeakError, match='fresh workdir'):
    split.check_no_heldout_phrasing([_phrased(0, ['p0'], None), leaked], held)


def test_the_job_refuses_to_hold_out_every_phrasing_of_a_relation():
  c = synthesis_config.get_config('tiny')
  assert config_lib.job_from_config(c).heldout_phrasings == 1
  c.heldout_phrasings = 4  # father and mother have 4
  with pytest.raises(config_lib.SynthesisConfigError, match='keeps one'):
    config_lib.job_from_config(c)
