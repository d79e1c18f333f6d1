"""Tests for rollout cap, tool-use depth, exact dedup and failed turns."""

import dataclasses

from search_agent.filtering import selection


def test_rollout_cap_keeps_first_three_per_task(make_traj):
  trajs = [make_traj(f'a{i}', 'A') for i in range(5)] + [make_traj('b0', 'B')]
  result = selection.rollout_cap(trajs, 3)
  assert [t.id for t in result.kept] == ['a0', 'a1', 'a2', 'b0']
  assert [r.traj_id for r in result.removed] == ['a3', 'a4']
  assert result.removed[0].detail == 'rollout 4 of task A (cap 3)'
  assert result.stats['tasks_by_rollout_count'] == {'1': 1, '5': 1}
  assert len(selection.rollout_cap(trajs, 0).kept) == 6


def test_min_tool_turns_counts_valid_tool_turns(make_traj):
  two = make_traj('two', calls=(('search', {}), ('visit', {})))
  one_bad = make_traj(
      'bad', calls=(('search', {}), ('visit', {})), invalid=(0,)
  )
  none = make_traj('none', calls=())
  assert [selection.tool_call_turns(t) for t in (two, one_bad, none)] == [
      2,
      1,
      0,
  ]
  result = selection.min_tool_turns_filter([two, one_bad, none], 2)
  assert [t.id for t in result.kept] == ['two']
  assert result.removed[0].detail == '1 tool-call turn(s) < 2'
  assert result.stats['tool_turns_histogram'] == {'0': 1, '1': 1, '2': 1}


def test_dedup_keeps_distinct_rollouts_of_one_question(make_traj):
  a = make_traj('a')
  a_copy = dataclasses.replace(a, id='a-copy')
  b = make_traj('b', calls=(('search', {'query': ['other']}),))
  result = selection.dedup_filter([a, a_copy, b])
  assert [t.id for t in result.kept] == ['a', 'b']
  assert result.removed[0].detail == 'same messages as a'
  assert result.stats == {
      'distinct_sequences': 2,
      'tasks_kept': 1,
      'tasks_with_several_rollouts': 1,
  }
  # Ids and metadata do not matter, messages do.
  assert selection.message_key(a) == selection.message_key(a_copy)


def test_failed_turns_stay_as_context_without_loss(make_traj):
  t = make_traj(
      calls=(('search', {}), ('search', {'query': ['ok']})), invalid=(0,)
  )
  result = selection.mask_failed_turns([t])
  out = result.kept[0]
  assistant = [m for m in out.messages if m.role == 'assistant']
  assert [m.loss for m in assistant] == [False, True, True]
  assert [m.trainable for m in assistant] == [False, True, True]
  assert len(out.messages) == len(t.messages)  # Nothing removed.
  assert result.stats == {
      'failed_turns_masked': 1,
      'trajectories_with_failed_turns': 1,
  }


def test_real_data_tool_turns(webdancer):
  result = selection.min_tool_turns_filter(webdancer, 2)
  # Measured on the raw file: 179 trajectories make one tool call, 20 two,
  # 1 three.
  assert result.stats['tool_turns_histogram'] == {'1': 179, '2': 20, '3': 1}
  assert len(result.kept) == 21
  dedup = selection.dedup_filter(webdancer)
  assert len(dedup.kept) == 200
  assert dedup.stats['tasks_kept'] == 173
