"""Metrics by hand: Wilson interval, calibration error, summaries."""

import math

import pytest

from search_agent.evaluation import metrics


def test_wilson_interval_by_hand():
  # k=1, n=4, z=1.96: p=.25, z^2=3.8416, denom=1+3.8416/4=1.9604,
  # center=(.25+3.8416/8)/1.9604=.372475,
  # half=1.96*sqrt(.25*.75/4+3.8416/64)/1.9604=.326889.
  lo, hi = metrics.wilson_interval(1, 4)
  assert lo == pytest.approx(0.372475 - 0.326889, abs=1e-5)
  assert hi == pytest.approx(0.372475 + 0.326889, abs=1e-5)
  assert metrics.wilson_interval(0, 0) == (0.0, 1.0)
  lo, hi = metrics.wilson_interval(10, 10)
  assert hi == 1.0 and lo == pytest.approx(10 / (10 + 3.8416), abs=1e-9)


def test_calibration_error_by_hand():
  records = [
      {'correct': True, 'confidence': 90},
      {'correct': False, 'confidence': 90},
      {'correct': False, 'confidence': 30},
      {'correct': False, 'confidence': 10},
      {'correct': None, 'confidence': 50},  # judge error: left out
      {'correct': True, 'confidence': None},  # no confidence: left out
  ]
  # Bins: [.9,1): acc .5 vs conf .9 -> .4 * 2/4; [.3,.4): .3 * 1/4;
  # [.1,.2): .1 * 1/4. ECE = .2 + .075 + .025 = .3.
  cal = metrics.calibration(records)
  assert cal['n'] == 4 and cal['ece'] == pytest.approx(0.3)
  assert [b['n'] for b in cal['bins']] == [1, 1, 2]
  assert metrics.calibration([])['ece'] is None
  assert metrics.calibration([{'correct': True, 'confidence': 100}])['bins'][0][
      'bin'
  ] == [0.9, 1.0]


def test_summary_counts_judge_errors_apart():
  records = [
      {'correct': True, 'status': 'answered', 'n_tool_calls': 4,
       'tool_calls_by_name': {'search': 3, 'visit': 1}, 'steps': 5},
      {'correct': False, 'status': 'max_steps', 'budgets_hit': ['max_steps'],
       'n_tool_calls': 10, 'tool_calls_by_name': {'search': 10},
       'invalid_turns': 2, 'steps': 11},
      {'correct': None, 'status': 'answered', 'n_tool_calls': 1,
       'tool_calls_by_name': {'search': 1}, 'judge_attempts': 3, 'steps': 2},
  ]  # fmt: skip
  s = metrics.summarize(records)
  assert s['pass_at_1'] == 0.5 and s['graded'] == 2
  assert s['pass_at_1_strict'] == pytest.approx(1 / 3)
  assert s['judge_errors'] == 1 and s['judge_attempts'] == 3
  assert s['statuses'] == {'answered': 2, 'max_steps': 1}
  assert s['budgets_hit'] == {'max_steps': 1}
  t = s['tools']
  assert (
      t['calls_mean'] == 5.0 and t['calls_median'] == 4 and t['calls_max'] == 10
  )
  assert t['calls_by_tool'] == {'search': 14, 'visit': 1}
  assert t['invalid_turns'] == 2 and t['steps_mean'] == 6.0
  assert math.isclose(s['ci']['low'], metrics.wilson_interval(1, 2)[0])
  assert s['context'] == {
      'peak_prompt_tokens_mean': None,
      'peak_prompt_tokens_max': None,
      'resets': 0,
  }
  s = metrics.summarize(
      [
          {'correct': True, 'peak_prompt_tokens': 100, 'context_resets': 2},
          {'correct': True, 'peak_prompt_tokens': 300, 'context_resets': 1},
      ]
  )
  assert s['context'] == {
      'peak_prompt_tokens_mean': 200.0,
      'peak_prompt_tokens_max': 300,
      'resets': 3,
  }


def test_leakage_flags_are_counted():
  s = metrics.summarize(
      [
          {
              'correct': True,
              'leaked_urls': ['https://huggingface.co/datasets/x'],
          },
          {'correct': False, 'leaked_urls': []},
      ]
  )
  assert s['leakage_flagged'] == 1


def test_rms_calibration_as_hle_and_browsecomp_plus_compute_it():
  # 250 answers sorted by confidence: bins [0, 100) and [100, 250) (the last
  # takes the rest). Their loop stops before the last bin, so only the
  # first counts: 100 answers at 30% confidence, half correct.
  conf = [30.0] * 100 + [90.0] * 150
  correct = [i % 2 == 0 for i in range(100)] + [False] * 150
  recs = [
      {'task_id': f't{i}', 'correct': y, 'confidence': c}
      for i, (c, y) in enumerate(zip(conf, correct))
  ]
  rms = metrics.summarize(recs)['calibration_rms']
  assert rms['n'] == 250 and rms['bin_size'] == 100
  assert math.isclose(rms['error'], math.sqrt(100 / 250 * 0.2**2))
  # Under 100 answers there is no figure; with 100-199 it is 0 (one bin).
  assert metrics.calib_err_rms([0.5] * 99, [True] * 99) is None
  assert metrics.calib_err_rms([0.5] * 150, [True] * 150) == 0.0
  # The 10-bin L1 ECE stays beside it, labelled.
  s = metrics.summarize(recs)
  assert s['calibration']['method'].startswith('L1 ECE over 10')
  assert math.isclose(
      s['calibration']['ece'], 100 / 250 * 0.2 + 150 / 250 * 0.9
  )


def test_headline_is_strict_and_repeats_give_avg_and_pass_at_n():
  recs = [
      {'traj_id': 'a#0', 'task_id': 'a', 'correct': True},
      {'traj_id': 'a#1', 'task_id': 'a', 'correct': False},
      {'traj_id': 'b#0', 'task_id': 'b', 'correct': None},  # judge failed
      {'traj_id': 'b#1', 'task_id': 'b', 'correct': False},
  ]
  s = metrics.summarize(recs)
  assert s['headline'] == 'pass_at_1_strict'
  assert s['pass_at_1_strict'] == 0.25  # 1 of 4 rollouts
  assert s['pass_at_1'] == 1 / 3  # judge error left out (old meaning)
  assert s['questions'] == 2 and s['rollouts'] == 4
  assert math.isclose(s['ci_strict']['low'], metrics.wilson_interval(1, 4)[0])
  r = s['repeats']
  assert r['n'] == 2 and r['avg_at_n'] == 0.25 and r['pass_at_n'] == 0.5
  assert r['per_repeat'] == [0.5, 0.0]
