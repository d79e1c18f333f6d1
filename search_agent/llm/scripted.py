"""A scripted LLM for tests about harness logic (never about the model)."""

import asyncio
from typing import Callable, Sequence

from search_agent.llm import protocol

Responder = Callable[[Sequence[protocol.Message]], str]


class ScriptedLLM:
  """Replies from a fixed script or a function of the conversation.

  Attributes:
    name: Model name recorded in manifests.
    calls: Every conversation it was asked to continue, in order.
  """

  def __init__(
      self,
      script: Sequence[str | Exception] | Responder,
      *,
      name: str = 'scripted',
      delay_s: float = 0.0,
  ):
    self.name = name
    self.calls: list[list[protocol.Message]] = []
    self._script = script
    self._next = 0
    self._delay_s = delay_s

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    self.calls.append([dict(m) for m in messages])
    if self._delay_s:
      await asyncio.sleep(self._delay_s)
    out = []
    for _ in range(params.n):
      if callable(self._script):
        reply = self._script(messages)
      else:
        if self._next >= len(self._script):
          raise protocol.LLMError(
              f'scripted LLM {self.name!r} ran out of replies after'
              f' {len(self._script)} calls'
          )
        reply = self._script[self._next]
        self._next += 1
      if isinstance(reply, Exception):
        raise reply
      out.append(protocol.Completion(text=reply))
    return out
