"""Rubric induction for the turn judge (Iris, fine filtering).

Rather than hand-craft the turn criteria, sample some trajectories, ask the
judge for a free-form critique of each (`prompts/critique.txt`), then ask it
once to consolidate the recurring failure modes into a rubric
(`prompts/consolidate_rubric.txt`). The rubric is written to a file that the
turn judge reads (`TurnMaskConfig.rubric_path`).
"""

import asyncio
import dataclasses
import pathlib
import random
from typing import Sequence

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.filtering import judges
from search_agent.filtering import turn_mask
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib

PROMPT_DIR = pathlib.Path(__file__).parent / 'prompts'


@dataclasses.dataclass(frozen=True, kw_only=True)
class RubricInduction:
  """Result of one induction run.

  Attributes:
    rubric: The consolidated rubric (Markdown).
    critiques: (trajectory id, critique) for each sampled trajectory.
  """

  rubric: str
  critiques: tuple[tuple[str, str], ...]


def sample(
    trajs: Sequence[trajectory.Trajectory], n: int, seed: int
) -> list[trajectory.Trajectory]:
  """A seeded sample of `n` trajectories (all of them if fewer)."""
  if n >= len(trajs):
    return list(trajs)
  return random.Random(seed).sample(list(trajs), n)


def transcript(
    traj: trajectory.Trajectory, config: turn_mask.TurnMaskConfig
) -> str:
  """The whole trajectory without the system prompt, messages numbered."""
  return '\n\n'.join(
      turn_mask.render_message(i, m, config)
      for i, m in enumerate(traj.messages)
      if m.role != 'system'
  )


async def _ask(llm: protocol.LLM, text: str, max_tokens: int) -> str:
  params = protocol.SamplingParams(temperature=0.0, max_tokens=max_tokens)
  completions = await llm.chat([{'role': 'user', 'content': text}], params)
  reply = completions[0].text.strip() if completions else ''
  if not reply:
    raise protocol.LLMError(f'judge {llm.name!r} returned an empty reply')
  return reply


async def induce_rubric(
    trajs: Sequence[trajectory.Trajectory],
    llm: protocol.LLM,
    *,
    n: int,
    seed: int = 0,
    tasks: dict[str, task_lib.Task] | None = None,
    config: turn_mask.TurnMaskConfig = turn_mask.TurnMaskConfig(),
) -> RubricInduction:
  """Critiques `n` sampled trajectories and consolidates a rubric.

  Raises:
    LLMError: a critique or the consolidation failed (no partial rubric).
    NoReferenceError: a sampled trajectory has no reference answer.
  """
  critique = prompt_lib.load(str(PROMPT_DIR / 'critique.txt'))
  consolidate = prompt_lib.load(str(PROMPT_DIR / 'consolidate_rubric.txt'))
  chosen = sample(trajs, n, seed)
  gate = asyncio.Semaphore(config.concurrency)

  async def one(traj: trajectory.Trajectory) -> str:
    text = critique.render(
        question=traj.question,
        reference=judges.reference_for(traj, tasks).answer,
        transcript=transcript(traj, config),
    )
    async with gate:
      return await _ask(llm, text, config.max_tokens)

  critiques = await asyncio.gather(*(one(t) for t in chosen))
  joined = '\n\n'.join(
      f'## Critique {k + 1} (trajectory {t.id})\n{c}'
      for k, (t, c) in enumerate(zip(chosen, critiques))
  )
  rubric = await _ask(llm, consolidate.render(critiques=joined), 4096)
  return RubricInduction(
      rubric=_strip_fence(rubric),
      critiques=tuple((t.id, c) for t, c in zip(chosen, critiques)),
  )


def _strip_fence(text: str) -> str:
  """Drops a ```markdown fence around the whole reply, if any."""
  lines = text.strip().splitlines()
  if len(lines) >= 2 and lines[0].startswith('```') and lines[-1] == '```':
    return '\n'.join(lines[1:-1]).strip()
  return text.strip()
