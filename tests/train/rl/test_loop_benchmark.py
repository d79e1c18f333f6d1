"""The loop benchmark's arithmetic, its command lines and its latency draw."""

import json
import statistics

import numpy as np
import pytest

from search_agent.train.rl import rollout_times
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import schedule_comparison as loop_benchmark


def _m(t, busy, trajs=8, ages=(8, 0), groups=4):
  return {
      'time': t, 'learner_busy_seconds': busy, 'trajectories': trajs,
      'tokens_past_age_limit': 0, 'token_age_hist': list(ages),
      'group_seconds_p50': 1.0, 'groups_used': groups,
  }  # fmt: skip


def test_summary_skips_the_first_update():
  s = loop_benchmark.summarize(
      [_m(100, 50), _m(110, 4), _m(130, 6, ages=(0, 8))]
  )
  assert s['updates_measured'] == 2 and s['seconds'] == 30
  assert s['trajectories_per_hour'] == pytest.approx(3600 * 16 / 30)
  assert s['learner_idle_share'] == pytest.approx(1 - 10 / 30)
  assert s['learner_seconds_per_group'] == pytest.approx(10 / 8)
  assert s['max_token_age'] == 1


def test_summary_after_a_warmup():
  ms = [_m(100, 50), _m(110, 4), _m(130, 6), _m(136, 2)]
  s = loop_benchmark.summarize(ms, skip=2)
  assert s['updates_measured'] == 2 and s['seconds'] == 26
  assert s['trajectories_per_hour'] == pytest.approx(3600 * 16 / 26)


def test_group_metas_from_a_batch_on(tmp_path):
  root = tmp_path / 'queue' / 'groups'
  root.mkdir(parents=True)
  for b in (0, 1, 2):
    (root / f'q@{b}.json').write_text(
        json.dumps({'dispatch_batch': b, 'meta': {'seconds': 10.0 + b}})
    )
  assert loop_benchmark.group_seconds(str(tmp_path), min_batch=1) == [
      11.0, 12.0,
  ]  # fmt: skip
  assert len(loop_benchmark.group_metas(str(tmp_path))) == 3


def test_spread():
  s = loop_benchmark.spread(list(range(1, 101)))
  assert s['groups'] == 100 and s['p50'] == pytest.approx(50.5)
  assert s['p99_over_p50'] == pytest.approx(s['p99'] / 50.5)


def test_both_runs_train_as_many_groups():
  shape = loop_benchmark.Shape(slots=40, groups_per_update=30, sync_updates=6)
  assert shape.updates('synchronous') * 40 == shape.updates('ready_first') * 30
  assert (shape.warmup('synchronous'), shape.warmup('ready_first')) == (3, 4)
  with pytest.raises(ValueError, match='whole number'):
    loop_benchmark.Shape(slots=42, groups_per_update=32).updates('ready_first')


def test_the_two_runs_differ_only_in_the_schedule():
  shape = loop_benchmark.Shape()
  a = loop_benchmark.run_args('ready_first', 'd', shape)
  b = loop_benchmark.run_args('synchronous', 'd', shape)
  diff = sorted(set(a) ^ set(b))
  assert diff == [
      '--config.max_updates=12',
      '--config.max_updates=9',
      '--config.scheduler.groups_per_update=30',
      '--config.scheduler.groups_per_update=40',
      '--config.scheduler.start_after_ready=1',
      '--config.scheduler.start_after_ready=8',
      '--config.scheduler.synchronous=False',
      '--config.scheduler.synchronous=True',
  ]
  assert '--config.rollout.max_groups=40' in a  # the same slots


def test_the_latency_draw_follows_the_question_not_the_batch():
  cfg = rollout_worker.WorkerConfig(latency_median_s=30.0, latency_p99_s=117.0)
  draw = cfg.injected_latency
  # The same question and pass in batch 3 of one schedule and step 2 of the
  # other: the same draw; another pass: another draw.
  a = draw({'task_id': 'q7', 'batch': 3, 'pass': 1})
  b = draw({'task_id': 'q7', 'batch': 2, 'pass': 1})
  c = draw({'task_id': 'q7', 'batch': 3, 'pass': 2})
  assert a == b != c
  draws = [draw({'task_id': f'q{i}', 'pass': 0}) for i in range(4000)]
  assert np.median(draws) == pytest.approx(30.0, rel=0.05)
  assert np.quantile(draws, 0.99) / np.median(draws) == pytest.approx(
      117.0 / 30.0, rel=0.1
  )
  assert rollout_worker.WorkerConfig().injected_latency({'task_id': 'q'}) == 0


def test_stratified_draws_give_each_question_of_a_pass_its_own_band():
  ids = tuple(f'q{i}' for i in range(40))
  cfg = rollout_worker.WorkerConfig(
      latency_median_s=30.0, latency_p99_s=117.0, latency_strata=ids
  )
  mu, sigma = rollout_times.fit_lognormal(
      rollout_times.GroupTimes(median_min=30.0, p99_min=117.0)
  )
  for p in (0, 1):
    draws = sorted(cfg.injected_latency({'task_id': q, 'pass': p}) for q in ids)
    u = [statistics.NormalDist().cdf((np.log(d) - mu) / sigma) for d in draws]
    assert all(i / 40 <= x < (i + 1) / 40 + 1e-9 for i, x in enumerate(u))
  # Another pass gives a question another band; an unknown question a
  # plain draw.
  assert cfg.injected_latency({'task_id': 'q3', 'pass': 0}) != (
      cfg.injected_latency({'task_id': 'q3', 'pass': 1})
  )
  assert cfg.injected_latency({'task_id': 'x', 'pass': 0}) > 0


def test_compute_share_counts_groups_slower_than_their_draw():
  metas = [
      {'seconds': 10.2, 'injected_latency_s': 10.0},
      {'seconds': 14.0, 'injected_latency_s': 10.0},
      {'seconds': 3.0},  # no draw recorded
  ]
  assert loop_benchmark.compute_share(metas) == 0.5


@pytest.mark.parametrize('warmup, updates', [(0, 9), (9, 9), (10, 9)])
def test_a_warmup_that_leaves_no_window_fails_up_front(warmup, updates):
  # summarize() divided by a zero-length window after both runs had run.
  shape = loop_benchmark.Shape(
      slots=40, groups_per_update=40, sync_updates=updates,
      warmup_sync_updates=warmup,
  )  # fmt: skip
  with pytest.raises(ValueError, match='warm-up'):
    shape.warmup('synchronous')


def test_previous_runs_in_the_workdir_are_refused(tmp_path):
  # rl.run resumes its workdir: a second benchmark in the same DIR measured
  # the previous run (or a resumed one) as its own.
  shape = loop_benchmark.Shape(sync_updates=3, warmup_sync_updates=1)
  assert shape.updates('ready_first') == 4
  check = loop_benchmark.runs_in_the_way
  assert check(str(tmp_path), shape, reuse=False) == []
  rf, sync = tmp_path / 'ready_first', tmp_path / 'synchronous'
  rf.mkdir()
  assert check(str(tmp_path), shape, reuse=False) == []  # empty: a fresh run
  (rf / 'metrics.jsonl').write_text('{}\n' * 2)
  assert check(str(tmp_path), shape, reuse=True) == [str(rf)]  # incomplete
  (rf / 'metrics.jsonl').write_text('{}\n' * 4)
  assert check(str(tmp_path), shape, reuse=True) == []
  assert check(str(tmp_path), shape, reuse=False) == [str(rf)]
  (sync / 'checkpoints').mkdir(parents=True)  # no metrics yet, still a run
  assert check(str(tmp_path), shape, reuse=True) == [str(sync)]
