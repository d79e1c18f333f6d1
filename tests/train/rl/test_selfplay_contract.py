"""Self-play that reaches the learner (`rl.py:searchmaster,tiny,warm`).

The policy is a tiny checkpoint that learned its seed pool's Proposer and
Solver demonstrations by heart (data/tiny_selfplay_policy/MANIFEST.json).
Real rollouts (in-process sampler at the variant's temperature, real
index, programmatic Verifier) and the real learner: the run must train
Proposer and Solver groups whose rewards differ, and its rows must carry
every filter's pass rate, h_min and both roles' rewards as numbers. A role
with no advantage in any of the six seeds is rare (the estimate is in
docs/experiments/selfplay.md).
"""

import json
import pathlib

import pytest

from search_agent.rewards import searchmaster as sm
from tests.train.rl import rl_binary

# Beside the suite's other worker it can run past the default 900 s
# (its times: docs/experiments/selfplay.md).
pytestmark = [pytest.mark.maxtext, pytest.mark.slow, pytest.mark.timeout(1800)]


def _jsonl(path: pathlib.Path) -> list[dict]:
  return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def test_proposer_and_solver_groups_with_advantages_are_trained(tmp_path):
  workdir = rl_binary.run(tmp_path, 'searchmaster,tiny,warm', 1)
  (row,) = _jsonl(workdir / 'metrics.jsonl')
  assert row['policy_version'] == 1
  # Both roles' groups went through the learner, some with an advantage.
  assert row['role_groups_with_advantage']['proposer'] >= 1, row
  assert row['role_groups_with_advantage']['solver'] >= 1, row
  assert row['eligible_tokens'] > 0
  assert sum(row['trained_tokens_by_version'].values()) > 0, row
  # Every filter was reached, so each pass rate is a number.
  for f in sm.FILTERS:
    assert isinstance(row['filter_pass'][f], float), (f, row['filter_pass'])
  assert row['tasks_passing'] >= 1
  for key in ('h_min_mean', 'proposer_reward_mean', 'solver_reward_mean'):
    assert isinstance(row[key], float), (key, row[key])
