"""A per-rollout tool-call budget ("up to 200 tool calls per rollout").

`CappedToolbox` wraps one trajectory's toolbox: after `max_calls` calls
every further call returns an error observation telling the agent to
answer (the call is not executed), so a rollout never runs more than
`max_calls` tools; the agent's step cap still ends the rollout.
"""

import dataclasses
from typing import Any

from search_agent.agent import react
from search_agent.agent import trajectory as traj_lib

EXHAUSTED = (
    'Error: the tool-call budget of this rollout ({n} calls) is used up;'
    ' give your final reply now.'
)


@dataclasses.dataclass(frozen=True)
class BudgetResult:
  """The observation of a call refused for the budget."""

  text: str
  error: str | None


class CappedToolbox:
  """Executes at most `max_calls` tool calls of the wrapped toolbox."""

  def __init__(self, inner: react.Toolbox, max_calls: int):
    if max_calls < 1:
      raise ValueError(f'max_calls must be >= 1, got {max_calls}')
    self.inner, self.max_calls, self.calls = inner, max_calls, 0

  def schemas(self) -> list[dict[str, Any]]:
    return self.inner.schemas()

  async def execute(self, call: traj_lib.ToolCall) -> Any:
    if self.calls >= self.max_calls:
      text = EXHAUSTED.format(n=self.max_calls)
      return BudgetResult(text=text, error=text)
    self.calls += 1
    return await self.inner.execute(call)
