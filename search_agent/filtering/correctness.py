"""Correctness gate (Iris; open recipe "Training Data and Objective").

Two parts: the rollout terminated with a final answer (status 'answered',
non-empty answer), and the judge finds that answer correct against the
reference. Judging is the only effectful step (`judge_trajectories`); the
filter itself is a pure function of the verdicts. A judge failure leaves the
trajectory undecided: it is reported as an error, never as incorrect.
"""

import asyncio
import collections
from typing import Mapping

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.filtering import judges
from search_agent.filtering import stage_result
from search_agent.llm import protocol

Verdict = bool | str
"""True/False from the judge, or a string describing why judging failed."""


def terminated(traj: trajectory.Trajectory) -> bool:
  """Ended with an answer: status 'answered' and a non-empty final answer."""
  return traj.status == 'answered' and bool((traj.final_answer or '').strip())


async def judge_trajectories(
    trajs: list[trajectory.Trajectory],
    judge: judges.AnswerJudge,
    tasks: dict[str, task_lib.Task] | None = None,
    concurrency: int = 16,
) -> dict[str, Verdict]:
  """Judges every terminated trajectory; failures become error strings."""
  gate = asyncio.Semaphore(concurrency)

  async def one(traj: trajectory.Trajectory) -> Verdict:
    try:
      ref = judges.reference_for(traj, tasks)
      async with gate:
        return await judge(ref, traj.final_answer)
    except (protocol.LLMError, judges.NoReferenceError) as e:
      return f'{type(e).__name__}: {e}'

  todo = [t for t in trajs if terminated(t)]
  verdicts = await asyncio.gather(*(one(t) for t in todo))
  return {t.id: v for t, v in zip(todo, verdicts)}


def correctness_filter(
    trajs: list[trajectory.Trajectory],
    verdicts: Mapping[str, Verdict],
    tasks: dict[str, task_lib.Task] | None = None,
) -> stage_result.StageResult:
  """Keeps terminated trajectories whose verdict is True.

  Args:
    trajs: Input trajectories.
    verdicts: From `judge_trajectories` (keyed by trajectory id).
    tasks: Only used to quote the reference in removal details.

  Returns:
    removed: 'not_terminated' (with the status) or 'incorrect'; errors:
    'judge_error' (judge failed, no reference, or no verdict).
  """
  kept, removed, errors = [], [], []
  statuses = collections.Counter()
  for traj in trajs:
    if not terminated(traj):
      statuses[traj.status] += 1
      detail = f'status {traj.status}' + (
          f': {traj.error}' if traj.error else ''
      )
      removed.append(stage_result.removal(traj, 'not_terminated', detail))
      continue
    verdict = verdicts.get(traj.id, 'no verdict for this trajectory')
    if verdict is True:
      kept.append(traj)
    elif verdict is False:
      ref = judges.reference_for(traj, tasks)
      detail = (
          f'answer "{judges.short(traj.final_answer)}" vs reference'
          f' "{ref.answer}"'
      )
      removed.append(stage_result.removal(traj, 'incorrect', detail))
    else:
      errors.append(stage_result.removal(traj, 'judge_error', str(verdict)))
  stats = {
      'terminated': len(trajs) - sum(statuses.values()),
      'not_terminated_by_status': dict(statuses),
      'correct': len(kept),
      'incorrect': sum(r.reason == 'incorrect' for r in removed),
      'judge_errors': len(errors),
  }
  return stage_result.StageResult(
      name='correctness',
      kept=tuple(kept),
      removed=tuple(removed),
      errors=tuple(errors),
      stats=stats,
  )
