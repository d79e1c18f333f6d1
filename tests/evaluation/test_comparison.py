"""eval.compare's warnings: few or no shared questions, different graders."""

from search_agent.evaluation import comparison


def _run(ids, identity='default/exact_match'):
  return {
      'records': {i: {'task_id': i, 'correct': True} for i in ids},
      'report': {'manifest': {'judge': {'identity': identity}}},
  }


def test_no_shared_questions_is_a_warning():
  a, b = _run(['q1', 'q2']), _run(['q3'])
  p = comparison.paired(a['records'], b['records'])
  assert p['questions'] == 0
  [w] = comparison.warnings([a, b], p)
  assert w.startswith('the runs share no graded question (2 and 1')


def test_few_shared_questions_and_other_graders_are_warnings():
  a = _run([f'q{i}' for i in range(10)])
  b = _run(['q0', 'q1', 'q99'] + [f'x{i}' for i in range(7)], 'xbench/j')
  p = comparison.paired(a['records'], b['records'])
  w = comparison.warnings([a, b], p)
  assert w[0].startswith('only 2 questions are graded in both runs (of 10')
  assert w[1] == 'graded differently: default/exact_match vs xbench/j'
  assert (
      comparison.warnings([a, a], comparison.paired(a['records'], a['records']))
      == []
  )
