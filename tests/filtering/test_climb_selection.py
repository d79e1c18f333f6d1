"""Tests for the SFT-RL climbing selection."""

from search_agent.filtering import climb_selection


def test_band_depth_and_shortest(make_traj):
  deep = (('search', {'query': ['a']}), ('visit', {'url': ['u']}))
  # Task A: 3 of 4 correct (p = 0.75, inside 0 < p < 1).
  a_long = make_traj('a_long', 'A', calls=deep, reasoning='x' * 500)
  a_short = make_traj('a_short', 'A', calls=deep, reasoning='x')
  a_shallow = make_traj('a_shallow', 'A')
  a_wrong = make_traj('a_wrong', 'A', calls=deep)
  # Task B: all correct (p = 1, outside the band); task C: none correct.
  b = make_traj('b', 'B', calls=deep)
  c = make_traj('c', 'C', calls=deep)
  trajs = [a_long, a_short, a_shallow, a_wrong, b, c]
  correct = {t.id: t.id not in ('a_wrong', 'c') for t in trajs}
  result = climb_selection.climb_select(
      trajs, correct, climb_selection.ClimbConfig()
  )
  assert [t.id for t in result.kept] == ['a_short']
  reasons = {r.traj_id: r.reason for r in result.removed}
  assert reasons == {
      'a_long': 'not_shortest',
      'a_shallow': 'too_few_tool_turns',
      'a_wrong': 'incorrect',
      'b': 'outside_pass_band',
      'c': 'outside_pass_band',
  }
  assert result.stats['queries'] == 3
  assert result.stats['queries_selected'] == 1


def test_band_is_config(make_traj):
  deep = (('search', {}), ('visit', {}))
  b = make_traj('b', 'B', calls=deep)
  cfg = climb_selection.ClimbConfig(max_pass=1.01, min_tool_turns=1)
  result = climb_selection.climb_select([b], {'b': True}, cfg)
  assert [t.id for t in result.kept] == ['b']
