"""SearchMaster SDR, proposer/solver rewards and OOP, worked by hand."""

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import searchmaster as sm

CFG = sm.SearchMasterRewards()


def _traj(calls):
  turn = traj_lib.Turn(
      role='assistant',
      content='',
      tool_calls=tuple(
          traj_lib.ToolCall(name=n, arguments=a) for n, a in calls
      ),
  )
  return traj_lib.Trajectory(
      id='x', task_id='t', question='q', messages=(turn,)
  )


def test_search_depth_counts_unique_queries():
  t = _traj(
      [
          ('search', {'query': ['a b', 'A  b', 'c']}),
          ('search', {'query': 'd'}),
          ('search', {'query': ['c']}),
          ('open', {'ref_id': ['1']}),
          ('visit', {'ref_id': ['2']}),
      ]
  )
  assert sm.search_depth(t, CFG) == 3
  assert sm.search_count(t, CFG) == 3  # calls, not queries
  assert sm.open_count(t, CFG) == 2
  # OOP counts calls (seed: "count open and search calls"): one call with 5
  # queries and 3 opens is ratio 3 (full penalty), not 3/5 (none).
  one_call = _traj(
      [('search', {'query': list('abcde')})] + [('open', {'ref_id': ['1']})] * 3
  )
  assert sm.search_depth(one_call, CFG) == 5
  assert sm.search_count(one_call, CFG) == 1
  n_open = sm.open_count(one_call, CFG)
  n_search = sm.search_count(one_call, CFG)
  assert sm.over_opening(n_open, n_search, CFG) == 1.0  # ratio 3 >= beta


def test_proposer_reward_hand_worked():
  z = [1, 0, 1, 0, 0, 0, 0, 0]
  h = [6, 12, 4, 1, 1, 1, 1, 1]  # failed rollouts' depths do not count
  # h_min = 4 -> SDR = 0.4 -> 0.2 + 0.8 * 0.4 = 0.52
  assert sm.proposer_reward(None, z, h, CFG) == pytest.approx(0.52)
  assert sm.proposer_reward(None, [0] * 8, h, CFG) == 0.2  # too hard
  assert sm.proposer_reward(None, [1] * 8, h, CFG) == 0.2  # too easy
  assert sm.proposer_reward(None, [1, 0], [15, 0], CFG) == 1.0  # capped at H
  assert sm.proposer_reward('format', z, h, CFG) == 0.0
  with pytest.raises(ValueError, match='unknown filter'):
    sm.proposer_reward('typo', z, h, CFG)


def test_over_opening_penalty_hand_worked():
  assert sm.over_opening(3, 2, CFG) == 0.0  # ratio 1.5 = alpha
  assert sm.over_opening(4, 2, CFG) == pytest.approx(0.5)  # ratio 2.0
  assert sm.over_opening(6, 2, CFG) == 1.0  # ratio 3.0 > beta
  assert sm.over_opening(1, 0, CFG) == 1.0 and sm.over_opening(0, 0, CFG) == 0
  # solver: correct with 2 searches and 4 opens -> 1 - 0.5 * 0.5
  base = sm.solver_reward(1, 2)
  assert sm.penalized(base, 4, 2, CFG) == pytest.approx(0.75)
  assert sm.solver_reward(1, 0) == 0.0  # no tool-supported evidence


def test_seed_gate_and_success_rate():
  assert not sm.keep_seed([0.2, 0.0, 0.2], CFG.r0)
  assert sm.keep_seed([0.2, 0.52], CFG.r0)
  assert sm.success_rate_reward([1, 1, 0, 0]) == 1.0
  assert sm.success_rate_reward([1, 1, 1, 1]) == 0.0


def test_bad_constants_rejected():
  with pytest.raises(ValueError, match='oop_beta'):
    sm.SearchMasterRewards(oop_alpha=2.0, oop_beta=1.0)


def test_on_real_trajectories(shared_data):
  from search_agent.agent import chatml  # pylint: disable=g-import-not-at-top

  path = shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl'
  trajs, errors = chatml.import_chatml_file(path)
  assert len(trajs) == 200 and not errors
  first = trajs[0]  # one search call with 4 distinct queries
  assert sm.search_depth(first, CFG) == 4 and sm.open_count(first, CFG) == 0
  depths = [sm.search_depth(t, CFG) for t in trajs]
  queries = [len(sm.search_queries(t, CFG)) for t in trajs]
  assert all(1 <= d <= q for d, q in zip(depths, queries))
  calls = [sm.search_count(t, CFG) for t in trajs]
  assert all(1 <= c <= q for c, q in zip(calls, queries))
  opens = [sm.open_count(t, CFG) for t in trajs]
  assert max(opens) == 1  # WebDancer's samples rarely visit: no penalty
  assert all(sm.over_opening(o, c, CFG) == 0 for o, c in zip(opens, calls))
