"""RL at the recipe's horizon (`rl.py:tiny,long`): rollouts whose context
window slides are trained as their segments, none dropped as inexact.

The policy is the shipped tiny SFT checkpoint (its MANIFEST.json), which
writes tool calls; one observation is kept, so a rollout of three or more
calls slides.
"""

import json

import pytest

from search_agent.agent import trajectory as traj_lib
from tests.train.rl import rl_binary

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def test_slid_rollouts_are_trained_not_dropped(tmp_path):
  workdir = rl_binary.run(tmp_path, 'tiny,long', 1)
  (row,) = [
      json.loads(l)
      for l in (workdir / 'metrics.jsonl').read_text().splitlines()
      if l.strip()
  ]
  assert row['dropped_inexact'] == 0
  assert row['trajectories_slid'] >= 1
  assert row['segments_per_trajectory'] > 1.0
  assert row['reprefill_overhead'] > 1.0
  # The rollouts file keeps every slid rollout's segments: each starts with
  # the same system prompt tokens (a whole prompt as sampled) and holds the
  # tokens sampled for at least one call.
  rollouts = [
      traj_lib.Trajectory.from_json(json.loads(l))
      for l in (workdir / 'rollouts-w0.jsonl').read_text().splitlines()
  ]
  slid = [t for t in rollouts if len(t.segments) > 1]
  assert slid and all(t.tokens is None for t in slid)
  for t in slid:
    assert t.meta['context_slides'] == len(t.segments) - 1
    assert len({s.token_ids[:8] for s in t.segments}) == 1
    # Generated tokens carry their policy version (an invalid turn's are not
    # trained: loss 0).
    assert all(any(v >= 0 for v in s.versions) for s in t.segments)
    # A later segment is not a continuation of the one before it.
    for a, b in zip(t.segments, t.segments[1:]):
      assert b.token_ids[: len(a.token_ids)] != a.token_ids
