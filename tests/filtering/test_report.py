"""Tests for the filtering report and the per-trajectory decisions."""

from search_agent.filtering import inputs
from search_agent.filtering import report
from search_agent.filtering import stage_result


def test_report_examples_errors_and_decisions(make_traj):
  a, b, c, d = (make_traj(x) for x in 'abcd')
  first = stage_result.StageResult(
      name='correctness',
      kept=(a, b),
      removed=(stage_result.removal(c, 'incorrect', 'answer "Lyon"'),),
      errors=(stage_result.removal(d, 'judge_error', 'LLMError: 503'),),
      stats={'correct': 2},
  )
  second = stage_result.split(
      'dedup', [a, b], [None, stage_result.removal(b, 'duplicate', 'same as a')]
  )
  summary = inputs.InputSummary(
      path='in.jsonl',
      lines=5,
      by_format={'trajectory': 4},
      line_errors=(),
      tool_calls={'search': 4},
      unknown_tool_calls={},
      parse_errors={},
  )
  rep = report.build_report(summary, [a, b, c, d], [first, second], {'k': 1})
  assert [(s['in'], s['kept']) for s in rep['stages']] == [(4, 2), (2, 1)]
  ex = rep['stages'][0]['examples']['incorrect'][0]
  assert ex == {
      'traj_id': 'c',
      'task_id': 'task1',
      'question': 'What is the capital of France?',
      'detail': 'answer "Lyon"',
  }
  assert rep['stages'][0]['error_examples']['judge_error'][0]['traj_id'] == 'd'
  assert rep['output']['trajectories'] == 1
  assert rep['output']['trainable_turns'] == 2
  md = report.render_markdown(rep)
  assert '| correctness | 4 | 2 | 1 | 1 | incorrect: 1 |' in md
  assert 'error — **judge_error**:' in md
  outcomes = {
      d['traj_id']: (d['stage'], d['outcome'])
      for d in report.decisions([first, second])
  }
  assert outcomes == {
      'a': ('dedup', 'kept'),
      'b': ('dedup', 'removed'),
      'c': ('correctness', 'removed'),
      'd': ('correctness', 'error'),
  }
