"""Token exactness of rollouts and the routing record stitched across calls."""

import numpy as np
import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.train.rl import token_exact


def _call(prompt, gen, lps, routes=None):
  return protocol.Completion(
      text='',
      token_ids=tuple(gen),
      logprobs=tuple(lps),
      prompt_token_ids=tuple(prompt),
      policy_version=0,
      routed_experts=routes,
  )


def _record(ids, lps):
  n = len(ids)
  return traj_lib.TokenRecord(
      token_ids=tuple(ids),
      loss_mask=(0,) * n,
      logprobs=tuple(lps),
      versions=(-1,) * n,
  )


# Two calls: prompt [1 2 3] -> [4 5]; prompt [1 2 3 4 5 6] -> [7 8].
IDS = [1, 2, 3, 4, 5, 6, 7, 8]
LPS = [0, 0, 0, -0.5, -0.25, 0, -1.0, -2.0]
CALLS = [
    _call([1, 2, 3], [4, 5], [-0.5, -0.25]),
    _call([1, 2, 3, 4, 5, 6], [7, 8], [-1.0, -2.0]),
]


def test_exact_rollout_passes():
  assert token_exact.check(_record(IDS, LPS), CALLS) == ''


def test_a_retokenized_prompt_is_caught():
  bad = [CALLS[0], _call([1, 2, 3, 9, 5, 6], [7, 8], [-1.0, -2.0])]
  assert 'call 2 is not a token prefix' in token_exact.check(
      _record(IDS, LPS), bad
  )


def test_lost_logprobs_and_missing_record_are_caught():
  lps = list(LPS)
  lps[6] = 0.0
  assert 'logprobs of call 2' in token_exact.check(_record(IDS, lps), CALLS)
  assert token_exact.check(None, CALLS, 'rewritten') == 'rewritten'


def test_routing_keeps_the_first_computation_of_each_position():
  # Call 1 computes positions 0..3 (prompt 3 + 2 generated - 1); call 2
  # positions 0..6; position k of call c holds the value 10 c + k.
  r1 = np.array([[[10 + k]] for k in range(4)])
  r2 = np.array([[[20 + k]] for k in range(7)])
  calls = [
      _call([1, 2, 3], [4, 5], [-0.5, -0.25], r1),
      _call([1, 2, 3, 4, 5, 6], [7, 8], [-1.0, -2.0], r2),
  ]
  out = token_exact.stitch_routing(calls, len(IDS))
  assert out[:, 0, 0].tolist() == [10, 11, 12, 13, 24, 25, 26]
  with pytest.raises(ValueError, match='covers'):
    token_exact.stitch_routing(calls, len(IDS) + 1)
  assert token_exact.stitch_routing(CALLS, len(IDS)) is None


def test_routing_codec_round_trips_compactly():
  r = np.random.default_rng(0).integers(0, 128, (50, 4, 8))
  enc = token_exact.encode_routing(r)
  assert enc['dtype'] == 'uint8' and enc['shape'] == [50, 4, 8]
  np.testing.assert_array_equal(token_exact.decode_routing(enc), r)
  big = r * 300
  np.testing.assert_array_equal(
      token_exact.decode_routing(token_exact.encode_routing(big)), big
  )
  np.testing.assert_array_equal(token_exact.decode_routing(r.tolist()), r)


def test_segments_of_a_slid_rollout_are_each_exact():
  """Call 3's prompt rewrote earlier tokens (the window slid): it starts a
  second segment, and each segment holds its own calls."""
  third = _call([1, 9, 7, 8, 6], [10], [-3.0])
  first = _record(IDS, LPS)
  second = _record([1, 9, 7, 8, 6, 10], [0, 0, 0, 0, 0, -3.0])
  calls = CALLS + [third]
  parts = token_exact.split_calls([first, second], calls)
  assert parts == [CALLS, [third]]
  assert token_exact.check_segments([first, second], calls) == ''
  # One segment cannot hold the slid call.
  assert 'call 3' in token_exact.check_segments([first], calls)
  # A segment's generated token that differs from the sampler's is caught.
  bad = _record([1, 9, 7, 8, 6, 11], [0, 0, 0, 0, 0, -3.0])
  assert 'segment 2' in token_exact.check_segments([first, bad], calls)
  assert token_exact.check_segments([], calls, 'no ids') == 'no ids'


def test_routing_is_stitched_per_segment():
  routes = lambda n, e: np.full((n, 1, 1), e, np.int32)
  calls = [
      _call([1, 2], [3], [-1.0], routes(2, 1)),
      _call([5, 6], [7], [-1.0], routes(2, 2)),
  ]
  segs = [_record([1, 2, 3], [0, 0, -1.0]), _record([5, 6, 7], [0, 0, -1.0])]
  a, b = token_exact.stitch_segments(segs, calls)
  assert a.ravel().tolist() == [1, 1] and b.ravel().tolist() == [2, 2]
