"""The one statistics module, against hand-worked figures."""

import pytest

from search_agent import stats
from search_agent.evaluation import comparison


def test_wilson_by_hand():
  lo, hi = stats.wilson(0, 100)
  assert lo == 0.0 and hi == pytest.approx(0.037, abs=1e-3)
  lo, hi = stats.wilson(30, 100)
  assert (lo, hi) == pytest.approx((0.219, 0.396), abs=1e-3)
  assert stats.wilson(0, 0) == (0.0, 1.0)


def test_mcnemar_by_hand():
  before = {str(i): False for i in range(20)}
  after = {str(i): i < 10 for i in range(20)}
  m = stats.mcnemar(before, after)
  assert (m['gained'], m['lost']) == (10, 0)
  assert m['p_value'] == pytest.approx(2 / 2**10)
  assert stats.mcnemar(after, after)['p_value'] == 1.0
  # 1 against 5 discordant: 2 * (C(6,0) + C(6,1)) / 2**6 = 14/64.
  assert stats.mcnemar_p(1, 5) == stats.mcnemar_p(5, 1) == 14 / 64
  assert stats.mcnemar_p(3, 3) == 1.0
  assert stats.mcnemar_p(0, 0) == 1.0


def test_eval_compare_uses_the_same_mcnemar():
  a = {f'q{i}': {'correct': i < 5} for i in range(8)}
  b = {f'q{i}': {'correct': i == 0} for i in range(8)}
  p = comparison.paired(a, b)
  assert (p['only_a'], p['only_b'], p['both_correct']) == (4, 0, 1)
  assert p['mcnemar_p'] == 2 / 2**4


def test_paired_bootstrap_brackets_the_difference():
  before = {str(i): False for i in range(40)}
  after = {str(i): i < 20 for i in range(40)}
  b = stats.paired_bootstrap(before, after)
  assert b['tasks'] == 40
  assert b['low'] < 0.5 < b['high']
  assert stats.paired_bootstrap(after, after) == {
      'tasks': 40,
      'low': 0.0,
      'high': 0.0,
  }
