"""Rollout scorers: the LLM judges of the recipe, or the deterministic one.

Both return `outcome.RolloutReward` (r = 0.6 y + 0.4 c). The LLM scorer
raises when a judge fails (the worker retries the group; a failure is never
a "no"); the deterministic scorer stands in for both judges without an LLM.
"""

from typing import Any

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.rewards import claims as claims_lib
from search_agent.rewards import deterministic_judge
from search_agent.rewards import outcome


class DeterministicScorer:
  """Normalized answer match; claims by subject+object in the report."""

  def __init__(self, weights: outcome.RewardWeights):
    self.weights = weights
    self.manifest: dict[str, Any] = dict(deterministic_judge.MANIFEST)

  async def __call__(
      self, traj: traj_lib.Trajectory, task: task_lib.Task
  ) -> outcome.RolloutReward:
    return deterministic_judge.score(traj, task, self.weights)


class LLMScorer:
  """Exact match then the answer judge; the claim judge with voting."""

  def __init__(
      self,
      answer_judge: protocol.LLM,
      claim_judge: protocol.LLM,
      voting: claims_lib.ClaimVoting,
      weights: outcome.RewardWeights,
  ):
    self.answer_judge, self.claim_judge = answer_judge, claim_judge
    self.voting, self.weights = voting, weights
    self.manifest = {
        'name': 'llm',
        'answer_judge': answer_judge.name,
        'claim_judge': claim_judge.name,
        'claim_judge_calls': voting.judge_calls,
        'claim_judge_min_votes': voting.judge_min_votes,
    }

  def counters(self) -> dict[str, int]:
    """Cumulative counts of the judges built as roles (registry.build_role):
    calls, failed calls, parse failures, re-asks and HTTP retries."""
    out: dict[str, int] = {}
    judges = {id(j): j for j in (self.answer_judge, self.claim_judge)}
    for judge in judges.values():
      if not isinstance(judge, role_client.RoleLLM):
        continue
      r = judge.report()
      for key in ('calls', 'failed_calls', 'parse_failures', 'parse_retries',
                  'http_retries'):  # fmt: skip
        out[f'judge_{key}'] = out.get(f'judge_{key}', 0) + int(r.get(key, 0))
    return out

  async def __call__(
      self, traj: traj_lib.Trajectory, task: task_lib.Task
  ) -> outcome.RolloutReward:
    return await outcome.score_rollout(
        traj,
        task,
        answer_judge=self.answer_judge,
        claim_judge=self.claim_judge,
        voting=self.voting,
        weights=self.weights,
    )
