"""Claim selection and coverage voting through the LLM protocol.

These tests are about the voting harness, so the judge is a ScriptedLLM.
"""

import asyncio
import json

import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.llm import scripted
from search_agent.rewards import claims
from search_agent.rewards import judging

C1 = task_lib.Claim(
    subject='George Edwards', relation='designed', object='Fulham Town Hall'
)
C2 = task_lib.Claim(
    subject='Fulham Town Hall', relation='built in', object='1888-1890'
)
C3 = task_lib.Claim(
    subject='George Edwards', relation='born in', object='London'
)
TASK = task_lib.Task(
    id='t1', question='Which town hall ...?', answer='Fulham Town Hall'
)


def _j(key, idx):
  return json.dumps({key: idx})


def test_selection_keeps_three_of_five_and_refines_once():
  refined = {
      'claims': [
          {
              'subject': 'George Edwards',
              'relation': 'designed',
              'object': 'Fulham Town Hall',
          },
          {
              'subject': 'Fulham Town Hall',
              'relation': 'built',
              'object': '1888',
          },
      ]
  }
  # votes: C1 in 5 calls, C2 in 3, C3 in 2 -> keep C1, C2
  script = [
      _j('required', [1, 2, 3]),
      _j('required', [1, 2, 3]),
      _j('required', [1, 2]),
      _j('required', [1]),
      f'```json\n{_j("required", [1])}\n```',
      json.dumps(refined),
  ]
  judge = scripted.ScriptedLLM(script)
  out = asyncio.run(claims.select_required_claims(judge, TASK, [C1, C2, C3]))
  assert len(judge.calls) == 6
  refine_prompt = judge.calls[-1][0]['content']
  assert 'designed' in refine_prompt and 'born in' not in refine_prompt
  assert [c.object for c in out] == ['Fulham Town Hall', '1888']


def test_selection_without_majority_skips_refinement():
  script = [
      _j('required', [1]),
      _j('required', [2]),
      _j('required', [3]),
      _j('required', []),
      _j('required', [1, 2]),
  ]
  judge = scripted.ScriptedLLM(script)
  out = asyncio.run(claims.select_required_claims(judge, TASK, [C1, C2, C3]))
  assert out == () and len(judge.calls) == 5


def test_coverage_five_of_seven_distinct_claims_once():
  dup = task_lib.Claim(
      subject='george edwards', relation='Designed', object='Fulham  Town Hall'
  )
  # C1: 7 votes, C2: 5 votes, C3: 4 votes (index repeated in one reply).
  replies = [[1, 2, 3], [1, 2, 3], [1, 2, 3], [1, 2, 3, 3], [1, 2], [1], [1]]
  judge = scripted.ScriptedLLM([_j('established', r) for r in replies])
  cov = asyncio.run(claims.claim_coverage(judge, 'report', [C1, C2, C3, dup]))
  assert cov.votes == (7, 5, 4)
  assert cov.established == (True, True, False)
  assert cov.coverage == pytest.approx(2 / 3)
  assert len(judge.calls) == 7


def test_no_required_claims_is_full_coverage_without_calls():
  judge = scripted.ScriptedLLM([])
  cov = asyncio.run(claims.claim_coverage(judge, 'anything', []))
  assert cov.coverage == 1.0 and not judge.calls


def test_judge_failure_is_an_error_not_a_no():
  script = [_j('established', [1])] * 3 + [protocol.LLMError('timeout')]
  judge = scripted.ScriptedLLM(script)
  with pytest.raises(protocol.LLMError, match='timeout'):
    asyncio.run(claims.claim_coverage(judge, 'report', [C1]))


@pytest.mark.parametrize(
    'reply',
    [
        'I think claim 1',
        '{"established": [4]}',
        '{"established": "1"}',
        '{"other": []}',
    ],
)
def test_malformed_judgment_raises(reply):
  judge = scripted.ScriptedLLM([reply] * 7)
  with pytest.raises(judging.JudgeReplyError):
    asyncio.run(claims.claim_coverage(judge, 'report', [C1, C2, C3]))


def test_final_report_only():
  traj = traj_lib.Trajectory(
      id='r1',
      task_id='t1',
      question='q',
      final_answer='Fulham Town Hall',
      messages=(
          traj_lib.Turn(role='user', content='q'),
          traj_lib.Turn(
              role='assistant',
              content='<tool_call>..',
              reasoning='Edwards designed it',
          ),
          traj_lib.Turn(role='tool', content='Edwards designed the hall'),
          traj_lib.Turn(
              role='assistant',
              content='Report: <answer>Fulham',
              reasoning='secret reasoning',
          ),
      ),
  )
  assert claims.final_report(traj) == 'Report: <answer>Fulham'
  unanswered = traj_lib.Trajectory(
      id='r2',
      task_id='t1',
      question='q',
      messages=traj.messages,
      final_answer=None,
      status='max_steps',
  )
  judge = scripted.ScriptedLLM([])
  cov = asyncio.run(
      claims.claim_coverage(judge, claims.final_report(unanswered), [C1, C2])
  )
  assert cov.coverage == 0.0 and not judge.calls


def test_prompts_are_files_with_their_fields():
  for name in ('claim_select', 'claim_refine', 'claim_judge', 'answer_judge'):
    assert (judging.PROMPT_DIR / f'{name}.txt').is_file()
  with pytest.raises(KeyError, match='report'):
    judging.render_prompt('claim_judge', claims='1. a | b | c')
