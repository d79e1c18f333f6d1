"""Warmup + cosine schedule, hand-worked at the recipe's config_lib."""

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


def test_warmup_stable_decay_values():
  lr = schedule_lib.make_schedule(
      schedule_lib.ScheduleConfig(
          kind='warmup_stable_decay', peak=2e-2, minimum=1e-4,
          warmup_steps=10, total_steps=2500, decay_steps=500,
      )
  )  # fmt: skip
  assert float(lr(0)) == pytest.approx(2e-3)  # peak / warmup
  assert float(lr(10)) == float(lr(1000)) == float(lr(2000))
  assert float(lr(2000)) == pytest.approx(2e-2)  # held to the decay
  mid = 1e-4 + (2e-2 - 1e-4) / 2  # cos(pi/2): halfway through the decay
  assert float(lr(2250)) == pytest.approx(mid, rel=1e-5)
  assert float(lr(2125)) == pytest.approx(
      1e-4 + (2e-2 - 1e-4) * (1 + math.cos(math.pi / 4)) / 2, rel=1e-5
  )
  assert float(lr(2500)) == float(lr(9000)) == pytest.approx(1e-4)
  for bad in (0, 2491, 3000):
    with pytest.raises(schedule_lib.ScheduleError, match='decay_steps'):
      schedule_lib.make_schedule(
          schedule_lib.ScheduleConfig(
              kind='warmup_stable_decay', warmup_steps=10,
              total_steps=2500, decay_steps=bad,
          )
      )  # fmt: skip
