"""Chat messages: a turn of a conversation and the tool calls it makes.

The types every layer that renders, samples or parses chats shares: the
renderer and chat template, the rollout server's OpenAI routes, the agent's
trajectories (agent/trajectory.py holds them as its messages).
"""

import dataclasses
from typing import Any

ROLES = ('system', 'user', 'assistant', 'tool')


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolCall:
  """A tool call as the assistant wrote it."""

  name: str
  arguments: dict[str, Any]
  call_id: str = ''


@dataclasses.dataclass(frozen=True, kw_only=True)
class Turn:
  """One chat message.

  Attributes:
    role: 'system', 'user', 'assistant' or 'tool'.
    content: Visible text (for assistant turns: text after the reasoning,
      including any `<tool_call>` / `<answer>` blocks as written).
    reasoning: Assistant reasoning (`<think>` content), kept separately.
    tool_calls: Parsed tool calls of an assistant turn.
    invalid: Assistant turn whose tool call failed to parse or validate: it
      stays as context but carries no loss.
    loss: Whether an assistant turn is eligible for loss (turn-level masking
      sets it False; system/user/tool turns never carry loss).
    name: Tool name for tool observations.
  """

  role: str
  content: str
  reasoning: str = ''
  tool_calls: tuple[ToolCall, ...] = ()
  invalid: bool = False
  loss: bool = True
  name: str = ''

  @property
  def trainable(self) -> bool:
    return self.role == 'assistant' and self.loss and not self.invalid
