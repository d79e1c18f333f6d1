"""Each benchmark's own grader: template text, exact-match step, parser."""

import asyncio
import hashlib

import pytest

from search_agent.agent import task as task_lib
from search_agent.evaluation import grading
from search_agent.evaluation import grading_protocols
from search_agent.evaluation import manifest
from search_agent.llm import scripted
from search_agent.llm.prompts import prompt as prompt_lib

FAST = dict(backoff_s=0.0)


def test_templates_are_the_benchmarks_own_verbatim():
  bcp = prompt_lib.load('browsecomp_plus_grader.txt')
  # sha256 of GRADER_TEMPLATE.strip() in texttron/BrowseComp-Plus
  # scripts_evaluation/evaluate_run.py and of LLM_JUDGE_PROMPT.strip() in
  # xbench-ai/xbench-evals eval_grader.py.
  assert bcp.sha256 == (
      '71fb29f51a56cea9fe647331d525648474195fa4816f7d05632459d572419d90'
  )
  assert bcp.fields == {'question', 'response', 'correct_answer'}
  assert (
      '[correct_answer]: Repeat the [correct_answer] given above.' in bcp.text
  )
  assert 'extracted from the [response]. \n' in bcp.text  # sic: the space
  xb = prompt_lib.load('xbench_grader.txt')
  assert xb.sha256 == (
      '471dff6cb8986dfe79c5bd3ef4a175ba237e47ff132c243588065814378eb4e9'
  )
  assert xb.fields == {'question', 'response', 'correct_answer'}
  assert xb.text.startswith(
      '你是一个通用人工智能助手。根据下面给出的[正确答案]'
  )
  assert '[回答]:{response}' in xb.text  # no space after the colon, upstream
  for text in (bcp.text, xb.text):
    assert hashlib.sha256(text.encode()).hexdigest() in (bcp.sha256, xb.sha256)


def test_protocol_follows_the_dataset_format():
  g = grading.GraderConfig()
  assert g.resolve('xbench').template == 'xbench_grader.txt'
  assert g.resolve('browsecomp_plus').protocol == 'browsecomp_plus'
  assert g.resolve('tasks').template == 'browsecomp_grader.txt'
  # An explicit template or protocol wins.
  assert grading.GraderConfig(template='x.txt').resolve('xbench').template == (
      'x.txt'
  )
  with pytest.raises(ValueError, match='not one of'):
    grading.GraderConfig(protocol='hle')
  ids = {
      manifest.grader_identity(g.resolve(f), {'name': 'j'}, 'ab' * 32)
      for f in ('xbench', 'browsecomp', 'browsecomp_plus')
  }
  assert len(ids) == 3  # three protocols never compare silently


XB_TASK = task_lib.Task(id='x', question='问题', answer='1,060')


def test_xbench_exact_match_first_needs_no_judge():
  judge = scripted.ScriptedLLM([])  # any call would fail: script is empty
  config = grading.GraderConfig(protocol='xbench', **FAST)
  g = asyncio.run(
      grading.grade(XB_TASK, '<answer>1,060</answer>', '1,060', judge, config)
  )
  assert (g.correct, g.method, g.attempts) == (True, 'exact_match_first', 0)
  # The official answer line also counts: "最终答案: 1,060".
  assert grading_protocols.xbench_exact('推理……\n最终答案: 1,060', 'x', '1,060')
  assert not grading_protocols.xbench_exact(
      '<answer>1060</answer>', '1060', '1,060'
  )


# Judge replies in the format xbench's prompt asks for (最终答案/解释/结论),
# with the colon variants judges write.
XB_YES = '最终答案: 1060\n\n解释: 与正确答案1,060数值一致, 只是没有千位分隔符。\n\n结论: 正确'
XB_NO_FULLWIDTH = '最终答案：1500\n解释：与正确答案不一致。\n结论：错误'
XB_YES_TIGHT = '最终答案:1060\n解释:一致\n结论:正确'


def test_xbench_verdicts():
  assert grading_protocols.parse_xbench(XB_YES) == (True, '1060')
  assert grading_protocols.parse_xbench(XB_NO_FULLWIDTH) == (False, '1500')
  assert grading_protocols.parse_xbench(XB_YES_TIGHT) == (True, '1060')
  with pytest.raises(grading_protocols.VerdictError):
    grading_protocols.parse_xbench('最终答案: 1060\n解释: 无法判断')


def test_xbench_grade_calls_the_chinese_judge_when_not_exact():
  judge = scripted.ScriptedLLM(lambda messages: XB_YES)
  config = grading.GraderConfig(protocol='xbench', **FAST)
  g = asyncio.run(
      grading.grade(XB_TASK, '<answer>1060</answer>', '1060', judge, config)
  )
  assert (g.correct, g.method, g.extracted_answer) == (True, 'judge', '1060')
  assert g.confidence is None
  [[message]] = judge.calls
  assert '[正确答案]: 1,060' in message['content']
  assert message['content'].startswith('你是一个通用人工智能助手')


# BrowseComp-Plus's published per-query eval record (docs: "judge_response":
# "extracted_final_answer: ...\ncorrect: yes\nconfidence: 99%").
BCP_RECORD = 'extracted_final_answer: ...\ncorrect: yes\nconfidence: 99%'


def test_browsecomp_plus_parser():
  assert grading_protocols.parse_browsecomp_plus(BCP_RECORD) is True
  assert grading_protocols.parse_browsecomp_plus('**correct:** No\n') is False
  assert grading_protocols.parse_browsecomp_plus('**correct**: yes') is True
  # Their order: a bold verdict wins over an earlier plain one.
  assert (
      grading_protocols.parse_browsecomp_plus('correct: no\n**correct:** yes')
      is True
  )
  with pytest.raises(grading_protocols.VerdictError):
    grading_protocols.parse_browsecomp_plus('verdict: right')
  judge = scripted.ScriptedLLM(lambda messages: BCP_RECORD)
  config = grading.GraderConfig(protocol='browsecomp_plus', **FAST)
  task = task_lib.Task(id='q', question='Q?', answer='Queen Arwa University')
  g = asyncio.run(
      grading.grade(task, 'Exact Answer: QAU', 'QAU', judge, config)
  )
  assert (g.correct, g.confidence, g.extracted_answer) == (True, 99.0, '...')
