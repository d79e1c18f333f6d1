"""The loop benchmark's arithmetic and its command lines."""

import pytest

from search_agent.train.rl import schedule_comparison as loop_benchmark


def _m(t, busy, trajs=8, ages=(8, 0)):
  return {
      'time': t, 'learner_busy_seconds': busy, 'trajectories': trajs,
      'tokens_past_age_limit': 0, 'token_age_hist': list(ages),
      'group_seconds_p50': 1.0,
  }  # fmt: skip


def test_summary_skips_the_first_update():
  s = loop_benchmark.summarize(
      [_m(100, 50), _m(110, 4), _m(130, 6, ages=(0, 8))]
  )
  assert s['updates_measured'] == 2 and s['seconds'] == 30
  assert s['trajectories_per_hour'] == pytest.approx(3600 * 16 / 30)
  assert s['learner_idle_share'] == pytest.approx(1 - 10 / 30)
  assert s['max_token_age'] == 1


def test_the_two_runs_differ_only_in_the_schedule():
  a = loop_benchmark.run_args('ready_first', 'd', 5, 4, 4.0, 15.6)
  b = loop_benchmark.run_args('synchronous', 'd', 5, 4, 4.0, 15.6)
  diff = sorted(set(a) ^ set(b))
  assert diff == [
      '--config.scheduler.start_after_ready=1',
      '--config.scheduler.start_after_ready=2',
      '--config.scheduler.synchronous=False',
      '--config.scheduler.synchronous=True',
  ]
