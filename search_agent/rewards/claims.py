"""Required-claim selection and claim coverage by voting judges.

Open recipe, "Outcome and Claim Rewards": before RL, a judge selects the
required claims in 5 sampled calls; claims chosen in >= 3 are kept and one
refinement call drops incidental details. For each rollout, 7 sampled
judgments of the FINAL REPORT only; a distinct claim counts once if >= 5 agree.
Any judge failure raises `LLMError`; it is never counted as a "no".
"""

import dataclasses
from typing import Sequence

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.rewards import judging


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClaimVoting:
  """Vote counts of the claim judges.

  Attributes:
    select_calls: Sampled selection calls per task.
    select_min_votes: Selections a claim needs to be kept.
    judge_calls: Sampled coverage judgments per report.
    judge_min_votes: Judgments that must agree a claim is established.
    sampling: Sampling of every judge call.
  """

  select_calls: int = 5
  select_min_votes: int = 3
  judge_calls: int = 7
  judge_min_votes: int = 5
  sampling: judging.JudgeSampling = judging.JudgeSampling()

  def __post_init__(self):
    for calls, votes in (
        (self.select_calls, self.select_min_votes),
        (self.judge_calls, self.judge_min_votes),
    ):
      if not 1 <= votes <= calls:
        raise ValueError(f'need 1 <= min votes ({votes}) <= calls ({calls})')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Coverage:
  """Claim coverage of one report.

  Attributes:
    coverage: Fraction of distinct required claims established, in [0, 1]
      (1.0 when the task has no required claims).
    claims: The distinct required claims, in first-seen order.
    votes: Judgments that found each claim established.
    established: Whether each claim reached the vote threshold.
  """

  coverage: float
  claims: tuple[task_lib.Claim, ...] = ()
  votes: tuple[int, ...] = ()
  established: tuple[bool, ...] = ()


def format_claims(claims: Sequence[task_lib.Claim]) -> str:
  return '\n'.join(
      f'{i}. {c.subject} | {c.relation} | {c.object}'
      for i, c in enumerate(claims, 1)
  )


def distinct_claims(
    claims: Sequence[task_lib.Claim],
) -> tuple[task_lib.Claim, ...]:
  """Drops repeated (subject, relation, object) triples, case-insensitively."""
  seen, out = set(), []
  for c in claims:
    key = tuple(
        ' '.join(x.lower().split()) for x in (c.subject, c.relation, c.object)
    )
    if key not in seen:
      seen.add(key)
      out.append(c)
  return tuple(out)


async def select_required_claims(
    judge: protocol.LLM,
    task: task_lib.Task,
    candidates: Sequence[task_lib.Claim],
    voting: ClaimVoting = ClaimVoting(),
) -> tuple[task_lib.Claim, ...]:
  """Selects a task's required claims: majority vote, then one refinement.

  Args:
    judge: The auxiliary judge model.
    task: The task (its question and private reference answer are shown).
    candidates: Candidate claims from the supporting evidence.
    voting: Call counts and thresholds.

  Returns:
    The refined required claims; () when no candidate reaches the threshold
    (the refinement call is then skipped).

  Raises:
    LLMError: a judge call failed or replied malformed.
  """
  candidates = distinct_claims(candidates)
  if not candidates:
    return ()
  prompt = judging.render_prompt(
      'claim_select',
      question=task.question,
      answer=task.answer,
      claims=format_claims(candidates),
  )
  replies = await judging.sample_json(
      judge, prompt, voting.select_calls, voting.sampling,
      lambda r: judging.index_list(r, 'required', len(candidates), judge.name),
  )  # fmt: skip
  votes = [0] * len(candidates)
  for reply in replies:
    for i in judging.index_list(reply, 'required', len(candidates), judge.name):
      votes[i - 1] += 1
  kept = [c for c, v in zip(candidates, votes) if v >= voting.select_min_votes]
  if not kept:
    return ()
  return await _refine(judge, task, kept, voting.sampling)


async def _refine(judge, task, kept, sampling) -> tuple[task_lib.Claim, ...]:
  prompt = judging.render_prompt(
      'claim_refine',
      question=task.question,
      answer=task.answer,
      claims=format_claims(kept),
  )

  def refined(reply) -> list[task_lib.Claim]:
    items = reply.get('claims')
    if not isinstance(items, list) or not items:
      raise judging.JudgeReplyError(
          f'refinement by {judge.name!r} must return a non-empty "claims"'
          f' list for {len(kept)} kept claims, got {items!r:.120}'
      )
    try:
      return [
          task_lib.Claim(
              subject=str(x['subject']),
              relation=str(x['relation']),
              object=str(x['object']),
          )
          for x in items
      ]
    except (KeyError, TypeError) as e:
      raise judging.JudgeReplyError(
          f'refinement by {judge.name!r} has a claim without'
          f' subject/relation/object: {e!r}'
      ) from e

  (reply,) = await judging.sample_json(judge, prompt, 1, sampling, refined)
  return distinct_claims(refined(reply))


def final_report(traj: traj_lib.Trajectory) -> str:
  """The visible text of the last assistant turn ('' if it never answered).

  Reasoning and tool observations are excluded: they earn no claim credit.
  """
  if traj.final_answer is None:
    return ''
  for turn in reversed(traj.messages):
    if turn.role == 'assistant':
      return turn.content
  return ''


async def claim_coverage(
    judge: protocol.LLM,
    report: str,
    required: Sequence[task_lib.Claim],
    voting: ClaimVoting = ClaimVoting(),
) -> Coverage:
  """Fraction of distinct required claims established in `report`.

  Raises:
    LLMError: a judgment failed or replied malformed.
  """
  claims = distinct_claims(required)
  if not claims:
    return Coverage(coverage=1.0)
  if not report.strip():
    n = len(claims)
    return Coverage(
        coverage=0.0, claims=claims, votes=(0,) * n, established=(False,) * n
    )
  prompt = judging.render_prompt(
      'claim_judge', report=report, claims=format_claims(claims)
  )
  replies = await judging.sample_json(
      judge, prompt, voting.judge_calls, voting.sampling,
      lambda r: judging.index_list(r, 'established', len(claims), judge.name),
  )  # fmt: skip
  votes = [0] * len(claims)
  for reply in replies:
    for i in judging.index_list(reply, 'established', len(claims), judge.name):
      votes[i - 1] += 1
  established = tuple(v >= voting.judge_min_votes for v in votes)
  return Coverage(
      coverage=sum(established) / len(claims),
      claims=claims,
      votes=tuple(votes),
      established=established,
  )
