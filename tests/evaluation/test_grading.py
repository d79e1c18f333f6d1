"""Grading: verdict parsing (group 1), retries, errors never a "no"."""

import asyncio
import re

import pytest

from search_agent.agent import task as task_lib
from search_agent.evaluation import grading
from search_agent.llm import protocol
from search_agent.llm import scripted
from search_agent.llm.prompts import prompt as prompt_lib

TASK = task_lib.Task(id='t', question='Capital of France?', answer='Paris')
FAST = grading.GraderConfig(backoff_s=0.0)
YES = """extracted_final_answer: Paris

reasoning: The response names Paris, which matches.

correct: yes

confidence: 85"""


def test_official_template_is_verbatim():
  p = prompt_lib.load('browsecomp_grader.txt')
  assert p.fields == {'question', 'response', 'correct_answer'}
  assert p.text.startswith('Judge whether the following [response]')
  assert p.text.endswith('Put 100 if there is no confidence score available.')
  assert 'if there if there is any inconsistency' in p.text  # sic, upstream


def test_verdict_is_group_one_unlike_the_reference_parser():
  # The public reference compares group(0) ('correct: yes') with 'yes'.
  match = re.search(r'correct: (yes|no)', YES)
  assert match.group(0) == 'correct: yes' and match.group(0) != 'yes'
  assert grading.parse_verdict(YES) is True
  assert (
      grading.parse_verdict(YES.replace('correct: yes', 'correct: no')) is False
  )
  assert grading.parse_verdict('**correct:** yes') is True
  assert grading.parse_verdict('Correct: No') is False
  with pytest.raises(grading.JudgeParseError):
    grading.parse_verdict('I think it is right.')
  # 'incorrect: yes' on its own line is not a verdict line.
  with pytest.raises(grading.JudgeParseError):
    grading.parse_verdict('Incorrect: yes')


@pytest.mark.parametrize(
    'reply, verdict',
    [
        ("correct: 'yes'", True),  # the template says: Answer 'yes' if ...
        ('correct: "no"', False),
        ('{"extracted_final_answer": "Paris", "correct": "yes"}', True),
        ('**Correct**: **No**', False),
        ('- `correct`: yes', True),
        ('correct: [yes]', True),
        ('reasoning: close.\n\n  CORRECT:\tno.', False),
    ],
)
def test_verdict_variants_of_real_judges(reply, verdict):
  assert grading.parse_verdict(reply) is verdict


def test_confidence_and_extracted_answer():
  assert grading.parse_confidence(YES) == 85.0
  assert grading.parse_confidence('Confidence: 70%') == 70.0
  assert grading.parse_confidence('no number') is None
  assert grading.parse_confidence('{"correct": "no", "confidence": 40}') == 40
  assert grading.parse_confidence('**Confidence:** 55%') == 55.0
  assert grading.parse_extracted(YES) == 'Paris'


def test_judge_prompt_and_success():
  judge = scripted.ScriptedLLM([YES])
  g = asyncio.run(
      grading.grade(TASK, 'Exact Answer: Paris', 'Paris', judge, FAST)
  )
  assert (g.correct, g.method, g.attempts, g.confidence) == (
      True,
      'judge',
      1,
      85.0,
  )
  sent = judge.calls[0][0]['content']
  assert '[question]: Capital of France?' in sent
  assert '[response]: Exact Answer: Paris' in sent
  assert '[correct_answer]: Paris' in sent


def test_failures_are_retried_then_recorded_as_errors_not_no():
  judge = scripted.ScriptedLLM(
      [protocol.LLMError('HTTP 503'), 'no verdict here', YES]
  )
  g = asyncio.run(grading.grade(TASK, 'r', 'Paris', judge, FAST))
  assert g.correct is True and g.attempts == 3

  judge = scripted.ScriptedLLM([protocol.LLMError('down')] * 3)
  g = asyncio.run(grading.grade(TASK, 'r', 'Paris', judge, FAST))
  assert g.correct is None and g.attempts == 3
  assert 'attempt 3: LLMError: down' in g.error


def test_no_answer_and_exact_match_fallback():
  judge = scripted.ScriptedLLM([])
  g = asyncio.run(grading.grade(TASK, '', None, judge, FAST))
  assert (g.correct, g.method, judge.calls) == (False, 'no_answer', [])
  g = asyncio.run(
      grading.grade(TASK, 'Confidence: 60%\n<answer>paris.</answer>', ' Paris.',
                    None, FAST)
  )  # fmt: skip
  assert (g.correct, g.method, g.confidence) == (True, 'exact_match', 60.0)
  g = asyncio.run(grading.grade(TASK, '', 'Lyon', None, FAST))
  assert g.correct is False


def test_a_reply_cut_inside_its_reasoning_is_a_failed_attempt():
  musing = '<think>\nThe response says Paris.\ncorrect: yes?\nBut wait'
  judge = scripted.ScriptedLLM([musing, musing.replace('yes?', 'no')])
  two = grading.GraderConfig(max_attempts=2, backoff_s=0.0)
  g = asyncio.run(grading.grade(TASK, 'r', 'Paris', judge, two))
  assert g.correct is None and g.attempts == 2
  assert 'JudgeParseError' in g.error
  judge = scripted.ScriptedLLM([f'{musing}\n</think>\n\n{YES}'])
  g = asyncio.run(grading.grade(TASK, 'r', 'Paris', judge, FAST))
  assert g.correct is True and g.judge_response.strip() == YES


def test_confidence_is_the_judges_final_line():
  # The judge quotes the response's own confidence in its reasoning first.
  reply = (
      'extracted_final_answer: Queen Arwa University\n\n'
      'reasoning: The response says "Confidence: 40%" but names the right'
      ' university.\nconfidence: 40% stated in the response is low.\n\n'
      'correct: yes\n\nconfidence: 99%'
  )
  assert grading.parse_confidence(reply) == 99.0
  assert grading.parse_confidence('**confidence:** 85%\n') == 85.0
  # BrowseComp-Plus's published eval record: "...correct: yes\nconfidence: 99%".
  assert (
      grading.parse_confidence(
          'extracted_final_answer: ...\ncorrect: yes\nconfidence: 99%'
      )
      == 99.0
  )
