"""The ready-first scheduler's contract, event by event."""

import pytest

from search_agent.train.rl import scheduler as sched_lib

CFG = sched_lib.SchedulerConfig(
    groups_per_update=32,
    start_after_ready=8,
    dispatch_batch_groups=32,
    admission_window=8,
)


def _dispatch(s, n, prefix='q'):
  return [s.dispatch(f'{prefix}{i}') for i in range(n)]


def test_starts_at_eight_ready_and_updates_every_32_groups():
  s = sched_lib.Scheduler(CFG)
  ds = _dispatch(s, 64)
  assert {d.batch for d in ds} == {0, 1}
  for d in ds[32:39]:  # 7 ready groups from batch 1: not enough
    s.mark_ready(d.group_id)
  assert s.take() == []
  s.mark_ready(ds[0].group_id)  # the 8th, from batch 0
  chunk = s.take()
  assert len(chunk) == 8 and {g.split('@')[1] for g in chunk} == {'0', '1'}
  for d in ds[1:25]:
    s.mark_ready(d.group_id)
  assert len(s.take()) == 24 and s.update_full
  assert s.take() == []  # never overfills the update
  used = s.apply_update()
  assert len(used) == 32 and s.version == 1
  assert all(s.used_in[g] == 0 for g in used)


def test_last_chunk_may_be_smaller_than_start_threshold():
  s = sched_lib.Scheduler(CFG)
  ds = _dispatch(s, 40)
  for d in ds[:30]:
    s.mark_ready(d.group_id)
  assert len(s.take()) == 30
  s.mark_ready(ds[30].group_id)
  assert s.take() == []  # 1 ready, 2 missing
  s.mark_ready(ds[31].group_id)
  s.mark_ready(ds[32].group_id)
  assert len(s.take()) == 2 and s.update_full
  assert list(s.ready) == [ds[32].group_id]  # stays for the next update


def test_admission_window_counts_batches_ahead_of_the_update():
  cfg = sched_lib.SchedulerConfig(
      groups_per_update=4,
      start_after_ready=2,
      dispatch_batch_groups=4,
      admission_window=2,
  )
  s = sched_lib.Scheduler(cfg)
  ds = _dispatch(s, 8)
  assert [d.batch for d in ds] == [0] * 4 + [1] * 4
  assert not s.can_dispatch()
  with pytest.raises(sched_lib.SchedulerError, match='admission'):
    s.dispatch('late')
  for d in ds[4:]:  # batch 1 finishes first; batch 0 still in flight
    s.mark_ready(d.group_id)
  s.take()
  s.apply_update()
  assert s.can_dispatch() and s.dispatch('new').batch == 2
  s.mark_ready(ds[0].group_id)  # old groups stay selectable
  assert ds[0].group_id in s.ready


def test_each_group_used_once():
  s = sched_lib.Scheduler(CFG)
  (d,) = _dispatch(s, 1)
  s.mark_ready(d.group_id)
  with pytest.raises(sched_lib.SchedulerError, match='not in flight'):
    s.mark_ready(d.group_id)
  with pytest.raises(sched_lib.SchedulerError, match='of 32'):
    s.apply_update()


def test_groups_without_signal_are_dropped():
  s = sched_lib.Scheduler(CFG)
  a, b = _dispatch(s, 2)
  s.mark_ready(a.group_id, has_signal=False)
  s.mark_ready(b.group_id)
  assert s.dropped == {a.group_id} and list(s.ready) == [b.group_id]


def test_synchronous_steps_and_partial_carry_over():
  cfg = sched_lib.SchedulerConfig(
      groups_per_update=4, start_after_ready=2, synchronous=True, oversample=0.5
  )
  s = sched_lib.Scheduler(cfg)
  ds = _dispatch(s, 6)
  assert not s.can_dispatch()  # 4 * 1.5 per step
  for d in ds[:4]:
    s.mark_ready(d.group_id)
  s.take()
  s.apply_update()
  # two interrupted groups carry over; the step tops up to 6
  assert s.outstanding == 2
  new = _dispatch(s, 4, prefix='r')
  assert not s.can_dispatch() and {d.batch for d in new} == {1}


def test_dropped_group_gives_its_batch_slot_back():
  cfg = sched_lib.SchedulerConfig(
      groups_per_update=4,
      start_after_ready=2,
      dispatch_batch_groups=4,
      admission_window=1,
  )
  s = sched_lib.Scheduler(cfg)
  ds = _dispatch(s, 4)
  assert not s.can_dispatch()
  s.mark_ready(ds[0].group_id, has_signal=False)  # dynamic sampling
  assert s.can_dispatch()
  extra = s.dispatch('again')
  assert extra.batch == 0 and not s.can_dispatch()
  for d in [*ds[1:], extra]:
    s.mark_ready(d.group_id)
  assert len(s.take()) == 4 and s.update_full


def test_state_round_trip_rolls_back_to_the_checkpoint_version():
  cfg = sched_lib.SchedulerConfig(
      groups_per_update=2,
      start_after_ready=1,
      dispatch_batch_groups=4,
      admission_window=2,
  )
  s = sched_lib.Scheduler(cfg)
  ds = [s.dispatch(f't{i}') for i in range(6)]
  for d in ds[:4]:
    s.mark_ready(d.group_id)
  s.take()
  s.take()
  first = s.apply_update()  # update 0: checkpoint 1 follows
  s.take()  # one group accumulating for update 1
  s.mark_ready(ds[4].group_id, has_signal=False)
  state = s.to_state()
  same = sched_lib.Scheduler.from_state(cfg, state, version=1)
  # The accumulating chunk's gradients died with the process: ready again.
  assert list(same.ready) == state['accumulating'] + state['ready']
  assert not same.accumulating
  assert same.to_state() | {'ready': [], 'accumulating': []} == state | {
      'ready': [],
      'accumulating': [],
  }
  # Restart from checkpoint 0: update 0's groups are ready again, first.
  back = sched_lib.Scheduler.from_state(cfg, state, version=0)
  assert back.version == 0 and not back.used_in
  assert list(back.ready)[:2] == first
  assert sorted(back.ready) == sorted(d.group_id for d in ds[:4])
  assert back.dropped == {ds[4].group_id}
  assert set(back.in_flight) == {ds[5].group_id}
  with pytest.raises(sched_lib.SchedulerError, match='stale'):
    sched_lib.Scheduler.from_state(cfg, state, version=2)


def test_a_task_twice_in_one_batch_gets_distinct_group_ids():
  # A dispatch batch that wraps the task pool's pass holds a question twice;
  # its group id used to collide and stop the learner with SchedulerError.
  cfg = sched_lib.SchedulerConfig(
      groups_per_update=4,
      start_after_ready=1,
      dispatch_batch_groups=4,
      admission_window=2,
  )
  s = sched_lib.Scheduler(cfg)
  a, b = s.dispatch('a'), s.dispatch('b')
  s.mark_ready(a.group_id)  # ready, no longer in flight: still taken
  again = s.dispatch('a')
  assert [a.group_id, b.group_id, again.group_id] == ['a@0', 'b@0', 'a@0#2']
  assert again.task_id == 'a' and again.batch == 0
  s.mark_ready(again.group_id)
  assert s.take() == ['a@0', 'a@0#2']
  # The ids survive a resume: the restored scheduler knows both.
  t = sched_lib.Scheduler.from_state(cfg, s.to_state(), version=0)
  assert t.dispatch('a').group_id == 'a@0#3'
