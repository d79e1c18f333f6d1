"""The deterministic judge: exact match and subject+object claim coverage."""

import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import deterministic_judge as dj

TASK = task_lib.Task(
    id='t',
    question='Who directed the 2007 film Empties?',
    answer='Jan Svěrák',
    aliases=('Jan Sverak',),
    claims=(
        task_lib.Claim(
            subject='Empties', relation='directed by', object='Jan Svěrák'
        ),
        task_lib.Claim(subject='Empties', relation='year', object='2007'),
    ),
)


def _traj(report: str, answer: str | None) -> traj_lib.Trajectory:
  return traj_lib.Trajectory(
      id='t#0',
      task_id='t',
      question=TASK.question,
      messages=(
          traj_lib.Turn(role='user', content=TASK.question),
          traj_lib.Turn(role='assistant', content=report),
      ),
      final_answer=answer,
      status='answered' if answer is not None else 'max_tokens',
  )


def test_correct_answer_and_both_claims():
  r = dj.score(
      _traj('Empties (2007) was directed by Jan Sverak. <answer>Jan'
            ' Svěrák</answer>', 'Jan Svěrák'), TASK)  # fmt: skip
  assert (r.correct, r.coverage, r.claim_votes) == (1.0, 1.0, (1, 1))
  assert r.total == pytest.approx(1.0)


def test_partial_claims_and_wrong_answer():
  r = dj.score(_traj('Empties is by Jan Svěrák.', 'Someone Else'), TASK)
  assert (r.correct, r.claim_votes) == (0.0, (1, 0))
  assert r.total == pytest.approx(0.4 * 0.5)


def test_words_must_match_whole_not_inside_other_words():
  assert not dj.claim_covered('MTEmptiesX by Jan Svěrák', TASK.claims[0])
  assert dj.claim_covered('the EMPTIES, by jan sverak!', TASK.claims[0])


def test_unanswered_run_earns_nothing():
  r = dj.score(_traj('Empties by Jan Svěrák', None), TASK)
  assert (r.correct, r.coverage, r.total) == (0.0, 0.0, 0.0)
