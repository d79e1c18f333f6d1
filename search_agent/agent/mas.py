"""The multi-agent system: two searchers and one verifier, one model.

open-recipe.md ("Evaluation"): "two independent searchers and a verifier, all
powered by the same checkpoint. Each searcher investigates the question and
returns its trajectory and answer. The verifier examines both attempts and
performs additional searches to check the proposed answers against the
evidence. It returns one final answer per question."

Here: the searchers are ReAct runs of the same agent (each with its own
toolbox and, when seeded, seed + 1000·i), run concurrently. The verifier is a
ReAct run with the verifier system prompt (`mas_verifier.md`); its first user
message (`mas_attempts.md`) holds the question and, per attempt, its status,
every tool call it made, and its final reply (capped at `attempt_max_chars`,
the tail kept). The verifier has the same tools and budgets and may search
more. The returned trajectory is the verifier's, with the searchers'
trajectories in `meta['mas']`. If the verifier ends without an answer, the
final answer falls back to the first searcher answer (recorded as
`meta['mas']['fallback']`), so the system always reports what it found.
"""

import asyncio
import dataclasses
import json
from typing import Callable

from search_agent.agent import react
from search_agent.agent import trajectory
from search_agent.llm.prompts import prompt as prompt_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class MASConfig:
  """Shape of the multi-agent system.

  Attributes:
    searchers: Independent searcher runs (recipe: 2).
    verifier_prompt: System prompt file of the verifier.
    attempts_prompt: Template of the verifier's first user message.
    attempt_max_chars: Cap on each attempt's text shown to the verifier.
  """

  searchers: int = 2
  verifier_prompt: str = 'mas_verifier.md'
  attempts_prompt: str = 'mas_attempts.md'
  attempt_max_chars: int = 12_000


def format_attempt(i: int, traj: trajectory.Trajectory, max_chars: int) -> str:
  """One searcher attempt as the verifier sees it."""
  lines = [f'## Attempt {i + 1}', f'Status: {traj.status}', 'Tool calls:']
  for c in traj.tool_calls:
    args = json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)
    lines.append(f'- {c.name} {args}')
  replies = [m for m in traj.messages if m.role == 'assistant']
  final = replies[-1].content if replies else ''
  lines += ['Final reply:', final or '(none)']
  lines.append(f'Proposed answer: {traj.final_answer or "(no answer)"}')
  text = '\n'.join(lines)
  return text if len(text) <= max_chars else '...' + text[-max_chars:]


class MultiAgentSystem:
  """Searchers then a verifier; returns one trajectory with one answer."""

  def __init__(
      self,
      agent: react.ReActAgent,
      config: MASConfig,
      *,
      tool_text: str,
  ):
    """Builds the system.

    Args:
      agent: The ReAct agent (its LLM serves every role).
      config: MAS shape.
      tool_text: The tool schemas as shown in system prompts.
    """
    self.agent = agent
    self.config = config
    verifier = prompt_lib.load(config.verifier_prompt)
    self._verifier_system = verifier.render(tools=tool_text)
    self._attempts = prompt_lib.load(config.attempts_prompt)
    self.prompt_hashes = {
        config.verifier_prompt: verifier.sha256,
        config.attempts_prompt: self._attempts.sha256,
    }

  def _searcher(self, i: int) -> react.ReActAgent:
    cfg = self.agent.config
    if cfg.seed is not None:
      cfg = dataclasses.replace(cfg, seed=cfg.seed + 1000 * i)
    return react.ReActAgent(
        self.agent.llm,
        cfg,
        counter=self.agent.counter,
        summarizer=self.agent.summarizer,
    )

  async def run(
      self,
      *,
      traj_id: str,
      task_id: str,
      question: str,
      system_prompt: str,
      toolbox_factory: Callable[[], react.Toolbox],
  ) -> trajectory.Trajectory:
    """Runs the searchers concurrently, then the verifier.

    If a searcher raises, the others are cancelled before the error
    propagates (the runner records the question as failed), so no searcher
    keeps running outside the runner's concurrency bound.
    """
    runs = [
        asyncio.create_task(
            self._searcher(i).run(
                traj_id=f'{traj_id}/searcher{i}',
                task_id=task_id,
                question=question,
                system_prompt=system_prompt,
                toolbox=toolbox_factory(),
                meta={'mas_role': f'searcher{i}'},
            )
        )
        for i in range(self.config.searchers)
    ]
    try:
      searches = await asyncio.gather(*runs)
    except BaseException:
      for job in runs:
        job.cancel()
      await asyncio.gather(*runs, return_exceptions=True)
      raise
    attempts = '\n\n'.join(
        format_attempt(i, t, self.config.attempt_max_chars)
        for i, t in enumerate(searches)
    )
    verdict = await self.agent.run(
        traj_id=traj_id,
        task_id=task_id,
        question=question,
        system_prompt=self._verifier_system,
        user_content=self._attempts.render(
            question=question, attempts=attempts
        ),
        toolbox=toolbox_factory(),
        meta={'mas_role': 'verifier'},
    )
    answers = [t.final_answer for t in searches]
    final, fallback = verdict.final_answer, False
    if final is None:
      final = next((a for a in answers if a), None)
      fallback = final is not None
    meta = dict(verdict.meta)
    meta['mas'] = {
        'searcher_answers': answers,
        'fallback': fallback,
        'verifier_status': verdict.status,
        'searchers': [t.to_json() for t in searches],
        'prompt_hashes': self.prompt_hashes,
    }
    return dataclasses.replace(
        verdict,
        final_answer=final,
        status='answered' if fallback else verdict.status,
        meta=meta,
    )
