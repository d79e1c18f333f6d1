"""Context management inside the agent loop: which view each call sees.

The loop keeps the conversation append-only (that is what the trajectory
records); `ManagedContext` turns it into the prompt of the next call with the
policy functions of `context.py` (exact rewrites documented there):

  * `none`: the full history. At the limit the run ends ('context_limit').
  * `sliding_window`: older tool observations become omission markers; applied
    at every call (open-recipe.md, SFT and RL).
  * `discard_all` (iris.md's default): when the prompt reaches
    `Budgets.compress_at * context_limit` or would leave less than
    `min_output_tokens` (whichever comes first), the context becomes system
    prompt, question and one reset note carrying the steps left and the
    running notes of the *whole* history (tool calls and visible text since
    the start, so notes survive repeated resets); later turns follow it.
  * `summary`: as discard-all, with an LLM summary of the current view
    (prompt `context_summary.md`) as the note. A failed, truncated or empty
    summary raises `ContextSummaryError`: the run fails, it never continues
    silently with the full context.

A compression happens at most once per step; if the compressed view still
does not fit, the run ends with 'context_limit'. Every compression is an
event in `events` (step, policy, message index, tokens before/after, the
note), recorded in `Trajectory.meta['context']`.
"""

import dataclasses
from typing import Any, Sequence

from search_agent.agent import budgets as budgets_lib
from search_agent.agent import context
from search_agent.agent import trajectory
from search_agent.chat import messages as messages_lib
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib

POLICIES = context.POLICIES


class ContextSummaryError(protocol.LLMError):
  """The summary policy could not summarize; the run must fail."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContextConfig:
  """The context policy of a run (recorded in every result).

  Attributes:
    policy: One of POLICIES.
    keep_observations: Sliding window: tool observations kept in full.
    notes_max_chars: Discard-all: cap on the carried running notes.
    summary_prompt: Summary: prompt file name.
    summary_max_tokens: Summary: generation budget of the summary call.
  """

  policy: str = 'none'
  keep_observations: int = 5
  notes_max_chars: int = 8_000
  summary_prompt: str = 'context_summary.md'
  summary_max_tokens: int = 4_096

  def __post_init__(self):
    if self.policy not in POLICIES:
      raise ValueError(
          f'context policy {self.policy!r} is not one of {POLICIES}'
      )
    if self.keep_observations < 0:
      raise ValueError('keep_observations must be >= 0')


class ManagedContext:
  """Append-only history plus the view the next call sees."""

  def __init__(
      self,
      config: ContextConfig,
      budgets: budgets_lib.Budgets,
      counter: budgets_lib.TokenCounter,
      summarizer: protocol.LLM | None = None,
  ):
    if config.policy == 'summary' and summarizer is None:
      raise ValueError("context policy 'summary' needs a summarizer LLM")
    self.config = config
    self.budgets = budgets
    self.history: list[trajectory.Turn] = []
    self.events: list[dict[str, Any]] = []
    self._counter = counter
    self._summarizer = summarizer
    self._prefix: list[trajectory.Turn] = []
    self._start = 0

  def append(self, turn: trajectory.Turn) -> None:
    self.history.append(turn)

  def view(self) -> list[trajectory.Turn]:
    """The turns the next call sees."""
    turns = self._prefix + self.history[self._start :]
    if self.config.policy == 'sliding_window':
      turns = context.sliding_window(turns, self.config.keep_observations)
    return list(turns)

  def count(self, turns: Sequence[trajectory.Turn]) -> int:
    return self._counter.count([messages_lib.to_message(t) for t in turns])

  async def fit(self, step: int, steps_left: int) -> int | None:
    """Prompt tokens of the next view, compressing if the policy says so.

    Returns:
      The token count of `view()`, or None when it does not fit the context
      limit (the run must end with 'context_limit').

    Raises:
      ContextSummaryError: the summary policy failed to summarize.
    """
    n = self.count(self.view())
    compressing = self.config.policy in ('discard_all', 'summary')
    # Something to drop: turns after the question and after the last reset.
    news = len(self.history) > max(self._start, 2)
    full = n >= self.budgets.compress_tokens or not self.budgets.fits(n)
    if compressing and full and news:
      self._prefix = list(await self._reset(step - 1, steps_left))
      self._start = len(self.history)
      note = self._prefix[-1].content
      after = self.count(self.view())
      self.events.append(
          {
              'step': step,
              'policy': self.config.policy,
              'at_message': self._start,
              'tokens_before': n,
              'tokens_after': after,
              'note': note,
          }
      )
      n = after
    return n if self.budgets.fits(n) else None

  async def _reset(self, step: int, steps_left: int):
    if self.config.policy == 'discard_all':
      return context.discard_all(
          self.history,
          step=step,
          steps_left=steps_left,
          max_chars=self.config.notes_max_chars,
      )
    summary = await self._summary()
    return context.apply_summary(
        self.history, summary, step=step, steps_left=steps_left
    )

  async def _summary(self) -> str:
    prompt = prompt_lib.load(self.config.summary_prompt)
    view = self.view()
    history = '\n\n'.join(
        f'[{t.role}{":" + t.name if t.name else ""}] {t.reasoning}\n{t.content}'
        for t in view[2:]
    )
    text = prompt.render(question=view[1].content, history=history)
    params = protocol.SamplingParams(
        temperature=0.0, max_tokens=self.config.summary_max_tokens
    )
    try:
      [completion] = await self._summarizer.chat(
          [{'role': 'user', 'content': text}], params
      )
    except protocol.LLMError as e:
      raise ContextSummaryError(f'context summary call failed: {e}') from e
    summary = completion.text.split('</think>')[-1].strip()
    if not summary or completion.finish_reason == 'length':
      raise ContextSummaryError(
          f'context summary is unusable (finish_reason='
          f'{completion.finish_reason!r}, {len(summary)} chars)'
      )
    return summary
