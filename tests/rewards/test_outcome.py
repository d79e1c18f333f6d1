"""The combined reward r = 0.6 y + 0.4 c and the outcome judge."""

import asyncio
import json

import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import scripted
from search_agent.rewards import judging
from search_agent.rewards import outcome

TASK = task_lib.Task(
    id='t',
    question='How many spectators?',
    answer='12,000',
    aliases=('twelve thousand',),
)


def test_total_reward_hand_worked():
  assert outcome.total_reward(1, 0.5) == pytest.approx(0.8)
  assert outcome.total_reward(0, 1.0) == pytest.approx(0.4)
  assert outcome.total_reward(1, 0.0) == pytest.approx(0.6)  # > any wrong
  with pytest.raises(ValueError, match='coverage'):
    outcome.total_reward(1, 1.5)


def test_judge_answer_short_circuits_and_asks():
  judge = scripted.ScriptedLLM([json.dumps({'correct': True})] + ['yes'] * 3)
  run = lambda p: asyncio.run(outcome.judge_answer(judge, TASK, p))
  assert run('12000') and not judge.calls  # exact match, no call
  assert not run('') and not judge.calls  # empty answer, no call
  assert run('about 12 thousand people')
  # 'yes' is no verdict: asked again twice, then an error (never a yes).
  with pytest.raises(judging.JudgeReplyError, match='3 attempt'):
    run('13,000')
  assert len(judge.calls) == 4


def test_score_rollout_no_claims_means_full_coverage():
  traj = traj_lib.Trajectory(
      id='r',
      task_id='t',
      question='q',
      final_answer='12,000',
      messages=(traj_lib.Turn(role='assistant', content='<answer>12,000'),),
  )
  r = asyncio.run(
      outcome.score_rollout(
          traj, TASK, answer_judge=None, claim_judge=scripted.ScriptedLLM([])
      )
  )
  assert (r.correct, r.coverage, r.total) == (1.0, 1.0, 1.0)
