"""Tests for the correctness gate and the answer judges."""

import asyncio

import pytest

from search_agent.agent import task as task_lib
from search_agent.filtering import correctness
from search_agent.filtering import judges
from search_agent.llm import protocol
from search_agent.llm import scripted


def run(trajs, judge, tasks=None):
  verdicts = asyncio.run(correctness.judge_trajectories(trajs, judge, tasks))
  return verdicts, correctness.correctness_filter(trajs, verdicts, tasks)


def test_exact_and_contains_judges(make_traj):
  sentence = make_traj('s', answer='The capital is **Paris**, on the Seine.')
  exact = make_traj('e', answer='paris')
  wrong = make_traj('w', answer='Lyon')
  _, ex = run([sentence, exact, wrong], judges.AnswerJudge('exact'))
  assert [t.id for t in ex.kept] == ['e']
  _, co = run([sentence, exact, wrong], judges.AnswerJudge('contains'))
  assert [t.id for t in co.kept] == ['s', 'e']
  assert co.removed[0].reason == 'incorrect'
  assert '"Lyon" vs reference "Paris"' in co.removed[0].detail


def test_contains_needs_whole_words():
  assert judges.contains_match('It is Parisian.', 'Paris') is False
  assert judges.contains_match('the vespa brand', 'Vespa') is True
  assert judges.contains_match(None, 'x') is False
  assert judges.contains_match('anything', '', ('alias',)) is False
  assert judges.contains_match('an alias here', 'x', ('Alias',)) is True


def test_not_terminated_is_removed_with_status(make_traj):
  cut = make_traj('c', answer=None, status='max_steps')
  empty = make_traj('e', answer='  ')
  verdicts, result = run([cut, empty], judges.AnswerJudge('exact'))
  assert verdicts == {}  # Nothing judged.
  assert [r.reason for r in result.removed] == ['not_terminated'] * 2
  assert result.removed[0].detail == 'status max_steps'
  assert result.stats['not_terminated_by_status'] == {
      'max_steps': 1,
      'answered': 1,
  }


def test_llm_judge_and_failure_is_an_error_not_a_no(make_traj):
  trajs = [make_traj(str(i), answer=f'answer {i}') for i in range(3)]
  replies = {
      'answer 0': '{"correct": true}',
      'answer 1': 'Thinking... ```json\n{"correct": false}\n```',
      'answer 2': 'I cannot decide.',
  }

  def respond(messages):
    prompt = messages[-1]['content']
    return next(r for a, r in replies.items() if a in prompt)

  llm = scripted.ScriptedLLM(respond, name='judge-model')
  judge = judges.AnswerJudge('llm', llm)
  assert judge.name == 'judge-model'
  verdicts, result = run(trajs, judge)
  assert verdicts['0'] is True and verdicts['1'] is False
  assert 'JudgeReplyError' in verdicts['2']
  assert [t.id for t in result.kept] == ['0']
  assert [r.traj_id for r in result.removed] == ['1']
  assert [(r.traj_id, r.reason) for r in result.errors] == [
      ('2', 'judge_error')
  ]
  assert result.stats['judge_errors'] == 1
  # The prompt carried the question, reference and answer.
  assert 'capital of France' in llm.calls[0][0]['content']
  assert 'Reference answer: Paris' in llm.calls[0][0]['content']


def test_llm_transport_failure_is_recorded(make_traj):
  llm = scripted.ScriptedLLM([protocol.LLMError('connection refused')])
  verdicts, result = run(
      [make_traj(answer='Lyon')], judges.AnswerJudge('llm', llm)
  )
  assert 'connection refused' in verdicts['t1']
  assert result.kept == () and result.removed == ()
  assert len(result.errors) == 1


def test_exact_match_skips_the_llm(make_traj):
  llm = scripted.ScriptedLLM([])  # Any call would raise.
  verdicts, _ = run([make_traj(answer='paris')], judges.AnswerJudge('llm', llm))
  assert verdicts == {'t1': True} and llm.calls == []


def test_reference_from_tasks_then_meta(make_traj):
  t = make_traj(reference=None, answer='Rome')
  verdicts, result = run([t], judges.AnswerJudge('exact'))
  assert 'NoReferenceError' in verdicts['t1']
  assert result.errors[0].reason == 'judge_error'
  tasks = {
      'task1': task_lib.Task(
          id='task1', question='q', answer='Roma', aliases=('Rome',)
      )
  }
  verdicts, result = run([t], judges.AnswerJudge('exact'), tasks)
  assert verdicts == {'t1': True} and len(result.kept) == 1


def test_bad_judge_config():
  with pytest.raises(ValueError, match='not one of'):
    judges.AnswerJudge('fuzzy')
  with pytest.raises(ValueError, match='LLM is needed'):
    judges.AnswerJudge('llm')


def test_real_trajectories_contains_judge(webdancer):
  _, result = run(webdancer, judges.AnswerJudge('contains'))
  # Measured: references are short spans ("vespa"), answers are sentences;
  # 138 of 200 contain their reference as whole words after normalization.
  assert len(result.kept) == 138
  assert result.stats['terminated'] == 200
  _, exact = run(webdancer, judges.AnswerJudge('exact'))
  assert len(exact.kept) == 1
