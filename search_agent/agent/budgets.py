"""Agent budgets (steps, output tokens per call, context) and token counting.

Recipe values (open-recipe.md, RL recipe table, "Rollout budget" and "Context
policy"): up to 500 agent steps, 32,768 output tokens per assistant call, a
262,144-token context. What the loop does at each limit:

  * `max_steps`: the run ends with status 'max_steps', no answer.
  * `max_output_tokens`: a call that stops for length ends the run with status
    'max_tokens' (the turn is kept, truncated, and carries no answer). When
    the call's budget was the smaller room the context left
    (`output_room`), the status is 'context_limit' instead.
  * `context_limit`: before each call the prompt is counted; when the prompt
    plus `min_output_tokens` would not fit, the context policy may compress
    (discard-all, summary); if it cannot, the run ends with 'context_limit'.
    A server that rejects the prompt as too long ends it the same way.
"""

import dataclasses
from typing import Protocol, Sequence

from search_agent.agent import trajectory
from search_agent.llm import protocol

MAX_STEPS = 'max_steps'
MAX_OUTPUT_TOKENS = 'max_output_tokens'
CONTEXT_LIMIT = 'context_limit'


class BudgetConfigError(ValueError):
  """Budget values are inconsistent."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Budgets:
  """Limits of one agent run.

  Attributes:
    max_steps: Most assistant calls (agent steps) in one run.
    max_output_tokens: Most generated tokens per assistant call.
    context_limit: Most tokens in one prompt plus its generation.
    min_output_tokens: Room a call needs; a prompt leaving less than this
      counts as hitting the context limit.
    compress_at: Fraction of `context_limit` at which the discard-all and
      summary policies compress the context.
  """

  max_steps: int = 500
  max_output_tokens: int = 32_768
  context_limit: int = 262_144
  min_output_tokens: int = 1_024
  compress_at: float = 0.8

  def __post_init__(self):
    if self.max_steps < 1 or self.max_output_tokens < 1:
      raise BudgetConfigError(
          f'max_steps ({self.max_steps}) and max_output_tokens'
          f' ({self.max_output_tokens}) must be >= 1'
      )
    if not 0 < self.min_output_tokens < self.context_limit:
      raise BudgetConfigError(
          f'min_output_tokens ({self.min_output_tokens}) must be in'
          f' (0, context_limit={self.context_limit})'
      )
    if not 0.0 < self.compress_at <= 1.0:
      raise BudgetConfigError(f'compress_at {self.compress_at} not in (0, 1]')

  @property
  def compress_tokens(self) -> int:
    return int(self.compress_at * self.context_limit)

  def output_room(self, prompt_tokens: int) -> int:
    """Generation budget for a prompt: capped by both limits."""
    return min(self.max_output_tokens, self.context_limit - prompt_tokens)

  def fits(self, prompt_tokens: int) -> bool:
    return self.context_limit - prompt_tokens >= self.min_output_tokens


class TokenCounter(Protocol):
  """Counts the prompt tokens of a conversation."""

  def count(self, messages: Sequence[protocol.Message]) -> int:
    ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharTokenCounter:
  """Estimates tokens from characters (used when no tokenizer is given).

  Attributes:
    chars_per_token: Characters per token; 3.0 over-counts English BPE
      (about 4) so the estimate errs on the side of the limit.
    per_message: Template overhead per message.
  """

  chars_per_token: float = 3.0
  per_message: int = 8

  def count(self, messages: Sequence[protocol.Message]) -> int:
    chars = sum(
        len(m.get('content', '')) + len(m.get('reasoning', ''))
        for m in messages
    )
    return int(chars / self.chars_per_token) + self.per_message * len(messages)


class TokenizerCounter:
  """Exact counts through a Hugging Face `tokenizers`/`transformers` tokenizer.

  Counts the encoded text of each message plus a fixed template overhead; use
  the renderer for byte-exact prompts.
  """

  def __init__(self, tokenizer, per_message: int = 8):
    self._tokenizer = tokenizer
    self._per_message = per_message

  def count(self, messages: Sequence[protocol.Message]) -> int:
    total = 0
    for m in messages:
      text = m.get('reasoning', '') + m.get('content', '')
      ids = self._tokenizer.encode(text)
      total += len(getattr(ids, 'ids', ids)) + self._per_message
    return total
