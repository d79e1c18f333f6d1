"""Self-play that reaches the learner (`rl.py:searchmaster,tiny,warm`).

The policy is tiny_sft_policy continued on Proposer demonstrations rendered
from synthesized two-hop tasks beside the Solver's
(data/tiny_selfplay_policy/MANIFEST.json); the seeds are those tasks' first
pages. Real rollouts (in-process sampler, real index, programmatic
Verifier) and the real learner, two updates: Proposer and Solver GRPO
groups with a non-zero advantage must be trained, and every metrics row
must carry each filter's pass rate, h_min and both roles' mean rewards as
numbers.
"""

import json
import pathlib

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import searchmaster as sm
from search_agent.selfplay import proposal
from tests.train.rl import rl_binary

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

# The shipped fixture does not meet this contract yet (its MANIFEST.json's
# probe: 1 of 16 greedy proposals parses, none passes the filters), so the
# test is not run; drop the marker with a fixture whose proposals pass.
_NOT_YET = pytest.mark.xfail(
    run=False,
    strict=True,
    reason=(
        'tiny_selfplay_policy writes almost no parseable proposal'
        ' (docs/experiments/selfplay.md)'
    ),
)


def _jsonl(path: pathlib.Path) -> list[dict]:
  return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


@_NOT_YET
def test_proposer_and_solver_groups_with_advantage_are_trained(tmp_path):
  workdir = rl_binary.run(tmp_path, 'searchmaster,tiny,warm', 2)
  rows = _jsonl(workdir / 'metrics.jsonl')
  assert [r['policy_version'] for r in rows] == [1, 2]
  for r in rows:
    assert set(r['filter_pass']) == set(sm.FILTERS)
    for f in sm.FILTERS:
      assert isinstance(r['filter_pass'][f], float), (f, r['filter_pass'])
    for key in ('h_min_mean', 'proposer_reward_mean', 'solver_reward_mean'):
      assert isinstance(r[key], float), (key, r[key])
    assert r['eligible_tokens'] > 0
  signal = {
      role: sum(r['role_groups_with_advantage'][role] for r in rows)
      for role in ('proposer', 'solver')
  }
  assert signal['proposer'] >= 1 and signal['solver'] >= 1, signal
  # The trained tokens came from groups with signal, under both versions'
  # rollouts at least once (the second update trains some of version 1's
  # or version 0's tokens; signal_summary counts only signal).
  assert sum(rows[-1]['trained_tokens_by_version'].values()) > 0
  # The rollouts file holds proposals that parse, and Solver rollouts of
  # the tasks they pose.
  rollouts = list(traj_lib.iter_jsonl(workdir / 'rollouts-w0.jsonl'))
  parsed = 0
  for t in rollouts:
    if t.meta['role'] != 'proposer':
      continue
    try:
      proposal.parse_proposal(proposal.final_text(t))
      parsed += 1
    except proposal.ProposalFormatError:
      pass
  assert parsed >= 1
  assert any(t.meta['role'] == 'solver' for t in rollouts)
  tasks = (workdir / 'selfplay' / 'tasks.jsonl').read_text().splitlines()
  assert tasks, 'no proposal passed the four filters'
