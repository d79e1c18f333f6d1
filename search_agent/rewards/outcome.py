"""Outcome reward and the combined reward r = 0.6 y + 0.4 c.

Open recipe, "Outcome and Claim Rewards": y in {0, 1} is answer correctness
against the reference, c in [0, 1] the required-claim coverage of the final
report (1 for a task without required claims). With weights 0.6/0.4 every
correct answer ([0.6, 1.0]) outscores every incorrect one ([0, 0.4]).
"""

import dataclasses

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.rewards import answer_match
from search_agent.rewards import claims as claims_lib
from search_agent.rewards import judging


@dataclasses.dataclass(frozen=True, kw_only=True)
class RewardWeights:
  """Weights of the combined reward.

  Attributes:
    correct: Weight of answer correctness y.
    coverage: Weight of claim coverage c.
  """

  correct: float = 0.6
  coverage: float = 0.4


@dataclasses.dataclass(frozen=True, kw_only=True)
class RolloutReward:
  """The reward of one rollout and its parts.

  Attributes:
    correct: y, answer correctness (0 or 1).
    coverage: c, claim coverage of the final report.
    total: r = w_y * y + w_c * c.
    claim_votes: Per-claim judge votes (empty without required claims).
  """

  correct: float
  coverage: float
  total: float
  claim_votes: tuple[int, ...] = ()


def total_reward(
    correct: float, coverage: float, weights: RewardWeights = RewardWeights()
) -> float:
  """r = w_y * y + w_c * c, checking both parts lie in [0, 1]."""
  for name, x in (('correct', correct), ('coverage', coverage)):
    if not 0.0 <= x <= 1.0:
      raise ValueError(f'{name} must lie in [0, 1], got {x}')
  return weights.correct * correct + weights.coverage * coverage


async def judge_answer(
    judge: protocol.LLM | None,
    task: task_lib.Task,
    prediction: str | None,
    sampling: judging.JudgeSampling = judging.JudgeSampling(temperature=0.0),
) -> bool:
  """Answer correctness: exact match first, then the LLM judge.

  An empty or missing answer is incorrect without a judge call; an exact
  (normalized) match with the answer or an alias is correct without one.

  Args:
    judge: The outcome judge, or None to score by exact match only.
    task: The task with its reference answer and aliases.
    prediction: The agent's final answer.
    sampling: Sampling of the single judge call.

  Raises:
    LLMError: the judge failed or replied without a boolean "correct".
  """
  if prediction is None or not prediction.strip():
    return False
  if answer_match.exact_match(prediction, task.answer, task.aliases):
    return True
  if judge is None:
    return False
  prompt = judging.render_prompt(
      'answer_judge',
      question=task.question,
      answer=task.answer,
      aliases=', '.join(task.aliases) or '(none)',
      prediction=prediction,
  )

  def verdict(reply) -> bool:
    value = reply.get('correct')
    if not isinstance(value, bool):
      raise judging.JudgeReplyError(
          f'answer judge {judge.name!r} must reply {{"correct": true|false}},'
          f' got {reply!r:.120}'
      )
    return value

  (reply,) = await judging.sample_json(judge, prompt, 1, sampling, verdict)
  return verdict(reply)


async def score_rollout(
    traj: traj_lib.Trajectory,
    task: task_lib.Task,
    *,
    answer_judge: protocol.LLM | None,
    claim_judge: protocol.LLM,
    voting: claims_lib.ClaimVoting = claims_lib.ClaimVoting(),
    weights: RewardWeights = RewardWeights(),
) -> RolloutReward:
  """Scores one rollout; `task.claims` are its required claims.

  Raises:
    LLMError: any judge call failed (the rollout must not be trained on).
  """
  correct = await judge_answer(answer_judge, task, traj.final_answer)
  cov = await claims_lib.claim_coverage(
      claim_judge, claims_lib.final_report(traj), task.claims, voting
  )
  y = 1.0 if correct else 0.0
  return RolloutReward(
      correct=y,
      coverage=cov.coverage,
      total=total_reward(y, cov.coverage, weights),
      claim_votes=cov.votes,
  )
