"""The tiny RL contract that can fail on learning (`rl.py:tiny,warm`).

The policy is the :tiny main job's SFT checkpoint, shipped with the pool of
train tasks it answers sometimes (data/tiny_sft_policy/MANIFEST.json), and
dynamic sampling is on: every trained group must hold a right and a wrong
rollout. Two updates must show that the loop learns from its own updated
policy: the in-process sampler loaded the pushed version 1, rollouts were
sampled under it, and the second update trained tokens version 1 sampled.
"""

import collections
import json
import pathlib
import re

import pytest

from search_agent.agent import trajectory as traj_lib
from tests.train.rl import rl_binary

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def _jsonl(path: pathlib.Path) -> list[dict]:
  return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def test_two_updates_learn_from_the_updated_policy(tmp_path):
  workdir = rl_binary.run(tmp_path, 'tiny,warm', 2)
  text = (tmp_path / 'log.txt').read_text(errors='replace')
  manifest = json.loads((workdir / 'manifest.json').read_text())
  assert manifest['config']['learner']['dynamic_sampling']
  rows = _jsonl(workdir / 'metrics.jsonl')
  assert [r['policy_version'] for r in rows] == [1, 2]
  # (c) Dynamic sampling kept only groups with a non-zero advantage.
  for r in rows:
    assert r['groups_used'] >= 1
    assert r['groups_with_advantage'] == r['groups_used'], r
    assert r['eligible_tokens'] > 0
  # The scored rollouts agree: some group's rewards differ.
  rewards = collections.defaultdict(list)
  rollouts = [
      traj_lib.Trajectory.from_json(t)
      for t in _jsonl(workdir / 'rollouts-w0.jsonl')
  ]
  for t in rollouts:
    rewards[t.meta['group_id']].append(t.meta['reward']['total'])
  assert any(len(set(r)) > 1 for r in rewards.values())
  # (b) The in-process sampler loaded the pushed version 1, and rollouts
  # were sampled under it (versions advance in the rollouts file).
  (loads,) = re.findall(r'sampler loaded versions (\[[\d, ]*\])', text)
  assert json.loads(loads)[:2] == [0, 1], loads
  sampled = {
      v
      for t in rollouts
      for s in t.segments
      for v, m in zip(s.versions, s.loss_mask)
      if m
  }
  assert {0, 1} <= sampled, sampled
  # (a) The second update trained tokens sampled by version >= 1 (with a
  # non-zero advantage: signal_summary counts no others).
  by_version = rows[1]['trained_tokens_by_version']
  assert sum(n for v, n in by_version.items() if int(v) >= 1) > 0, rows[1]
