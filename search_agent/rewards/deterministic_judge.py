"""A deterministic stand-in for the answer and claim judges (no LLM).

For CI and tiny runs without an LLM endpoint: the outcome y is the
normalized exact match of the final answer against the answer or an alias
(`answer_match.exact_match`, the first stage of the real answer judge); a
required claim counts as covered when both its subject and its object occur,
normalized, in the final report (`claims.final_report`: the visible text of
the last assistant turn of an answered run). r = 0.6 y + 0.4 c as with the
LLM judges. Runs that use it say so in their manifest (`MANIFEST`).
"""

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import answer_match
from search_agent.rewards import claims as claims_lib
from search_agent.rewards import outcome

NAME = 'deterministic'
MANIFEST = {
    'name': NAME,
    'answer': 'normalized exact match against answer and aliases',
    'claims': 'subject and object both occur (normalized) in the final report',
    'stands_in_for': 'LLM answer judge and claim judge (7 calls, >= 5 agree)',
}


def _contains(haystack: str, needle: str) -> bool:
  n = answer_match.normalize_answer(needle)
  return bool(n) and f' {n} ' in f' {haystack} '


def claim_covered(report: str, claim: task_lib.Claim) -> bool:
  """Whether both the claim's subject and object occur in `report`."""
  text = answer_match.normalize_answer(report)
  return _contains(text, claim.subject) and _contains(text, claim.object)


def score(
    traj: traj_lib.Trajectory,
    task: task_lib.Task,
    weights: outcome.RewardWeights = outcome.RewardWeights(),
) -> outcome.RolloutReward:
  """The reward of one rollout under the deterministic judge."""
  y = (
      1.0
      if answer_match.exact_match(traj.final_answer, task.answer, task.aliases)
      else 0.0
  )
  report = claims_lib.final_report(traj)
  required = list(dict.fromkeys(task.claims))
  votes = tuple(int(claim_covered(report, c)) for c in required)
  c = sum(votes) / len(votes) if votes else 1.0
  return outcome.RolloutReward(
      correct=y,
      coverage=c,
      total=outcome.total_reward(y, c, weights),
      claim_votes=votes,
  )
