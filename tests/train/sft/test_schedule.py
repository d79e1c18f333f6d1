"""Warmup + cosine schedule, hand-worked at the recipe's settings."""

import math

import pytest

from search_agent.train import schedule as schedule_lib


def test_recipe_schedule_values():
  lr = schedule_lib.make_schedule(schedule_lib.ScheduleConfig())
  peak, low = 5e-5, 1e-6
  assert float(lr(0)) == pytest.approx(peak / 51)
  assert float(lr(25)) == pytest.approx(peak * 26 / 51)
  assert float(lr(51)) == pytest.approx(peak)
  mid = 51 + (507 - 51) // 2  # cos(pi/2) = 0: halfway between peak and min
  assert float(lr(mid)) == pytest.approx((peak + low) / 2)
  quarter = 51 + 114  # cos(pi/4)
  want = low + (peak - low) * (1 + math.cos(math.pi / 4)) / 2
  assert float(lr(quarter)) == pytest.approx(want, rel=1e-5)
  assert float(lr(507)) == pytest.approx(low)
  assert float(lr(600)) == pytest.approx(low)


def test_constant_and_errors():
  lr = schedule_lib.make_schedule(
      schedule_lib.ScheduleConfig(kind='constant', peak=2e-6)
  )
  assert float(lr(0)) == float(lr(1000)) == pytest.approx(2e-6)
  warm = schedule_lib.make_schedule(
      schedule_lib.ScheduleConfig(
          kind='warmup_constant', peak=2e-2, warmup_steps=10, total_steps=20
      )
  )
  assert float(warm(0)) == pytest.approx(2e-3)  # peak / warmup
  assert float(warm(4)) == pytest.approx(1e-2)
  assert float(warm(10)) == float(warm(20)) == float(warm(10**6))
  assert float(warm(10)) == pytest.approx(2e-2)
  with pytest.raises(schedule_lib.ScheduleError, match='warmup_steps'):
    schedule_lib.make_schedule(
        schedule_lib.ScheduleConfig(warmup_steps=10, total_steps=5)
    )
  with pytest.raises(schedule_lib.ScheduleError, match='unknown'):
    schedule_lib.make_schedule(schedule_lib.ScheduleConfig(kind='linear'))
