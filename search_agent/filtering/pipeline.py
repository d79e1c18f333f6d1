"""The filtering pipeline: stages in order, each a StageResult.

Order (Iris trajectory level, then turn level; the open recipe's selection
is the same pipeline with its own config):
  rollout_cap -> correctness -> degeneration -> min_tool_turns -> dedup
  -> failed_turns (invalid tool-call turns: context, no loss)
  -> turn_mask (LLM judge, optional)
Every input trajectory ends in exactly one place: kept by the last stage,
removed by one stage with a reason, or an error of one stage.
"""

import dataclasses

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.filtering import correctness
from search_agent.filtering import degeneration as degeneration_lib
from search_agent.filtering import judges
from search_agent.filtering import selection
from search_agent.filtering import stage_result
from search_agent.filtering import turn_mask as turn_mask_lib
from search_agent.llm import protocol


@dataclasses.dataclass(frozen=True, kw_only=True)
class PipelineConfig:
  """Which stages run and how.

  Attributes:
    rollouts_per_task: Rollouts kept per task, first in input order (open
      recipe: 3); 0 keeps all.
    judge_concurrency: Answer-judge calls in flight at once.
    degeneration: Degeneration detector thresholds.
    min_tool_turns: Minimum tool-call turns (Iris N; open recipe 1).
    dedup: Drop exact duplicates over full message sequences.
    turn_mask: Turn-level masking settings; None skips the stage.
  """

  rollouts_per_task: int = 0
  judge_concurrency: int = 16
  degeneration: degeneration_lib.DegenerationConfig = dataclasses.field(
      default_factory=degeneration_lib.DegenerationConfig
  )
  min_tool_turns: int = 1
  dedup: bool = True
  turn_mask: turn_mask_lib.TurnMaskConfig | None = None


async def run_pipeline(
    trajs: list[trajectory.Trajectory],
    config: PipelineConfig,
    *,
    judge: judges.AnswerJudge,
    turn_llm: protocol.LLM | None = None,
    tasks: dict[str, task_lib.Task] | None = None,
) -> list[stage_result.StageResult]:
  """Runs every configured stage; returns their results in order.

  Raises:
    ValueError: turn masking is configured without a turn-judge LLM.
  """
  if config.turn_mask is not None and turn_llm is None:
    raise ValueError(
        'turn masking is configured but no turn-judge LLM was given: set the'
        ' turn judge endpoint or disable turn_mask'
    )
  results = [selection.rollout_cap(trajs, config.rollouts_per_task)]
  current = list(results[-1].kept)
  verdicts = await correctness.judge_trajectories(
      current, judge, tasks, config.judge_concurrency
  )
  results.append(correctness.correctness_filter(current, verdicts, tasks))
  results.append(
      degeneration_lib.degeneration_filter(
          list(results[-1].kept), config.degeneration
      )
  )
  results.append(
      selection.min_tool_turns_filter(
          list(results[-1].kept), config.min_tool_turns
      )
  )
  if config.dedup:
    results.append(selection.dedup_filter(list(results[-1].kept)))
  results.append(selection.mask_failed_turns(list(results[-1].kept)))
  if config.turn_mask is not None:
    current = list(results[-1].kept)
    labels = await turn_mask_lib.label_all(
        current, turn_llm, tasks, config.turn_mask
    )
    results.append(
        turn_mask_lib.turn_mask_filter(current, labels, config.turn_mask)
    )
  return results
