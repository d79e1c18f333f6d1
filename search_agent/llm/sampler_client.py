"""`LLM` over the in-process JAX sampler (search_agent/model/sampler.py).

The adapter turns the chat into prompt token ids with a `PromptRenderer`
(search_agent/agent/chat_prompts.py wraps the one renderer; the llm layer
does not import the agent layer), asks the sampler for tokens, and returns
completions that carry the prompt ids, the generated ids (the closing
end-of-turn token included, as the renderer puts loss on it), the per-token
sampling logprobs, the policy version and the routing record, so
trajectories are token-exact. The text is the decoded generation without
the end-of-turn token.

The sampler is any object with
`generate(prompts, *, params, stop_token_ids) -> list[sample]` where each
sample has `token_ids`, `logprobs`, `finish_reason` and optionally
`policy_version` and `routed_experts`. Generation runs in a worker thread,
one call at a time, so the event loop keeps serving tool calls meanwhile.
"""

import asyncio
from typing import Any, Protocol, Sequence

from search_agent.llm import protocol


class PromptRenderer(Protocol):
  """Chat messages to prompt ids, and generated ids back to text."""

  stop_token_ids: tuple[int, ...]

  def prompt_ids(self, messages: Sequence[protocol.Message]) -> tuple[int, ...]:
    """Raises ValueError when the messages cannot be rendered."""
    ...

  def decode(self, token_ids: Sequence[int]) -> str:
    ...


class TokenSampler(Protocol):
  """What the adapter needs from the model's sampler."""

  def generate(
      self,
      prompts: Sequence[Sequence[int]],
      *,
      params: protocol.SamplingParams,
      stop_token_ids: Sequence[int],
  ) -> list[Any]:
    ...


class SamplerLLM:
  """The in-process sampler behind the `LLM` protocol."""

  def __init__(
      self,
      sampler: TokenSampler,
      prompts: PromptRenderer,
      *,
      name: str = 'in-process-sampler',
  ):
    self.name = name
    self.sampler = sampler
    self.prompts = prompts
    self._stop_ids = tuple(prompts.stop_token_ids)
    self._lock = None

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    try:
      prompt = tuple(self.prompts.prompt_ids(messages))
    except ValueError as e:
      raise protocol.LLMError(
          f'{self.name}: cannot render the chat: {e}'
      ) from e
    if self._lock is None:
      self._lock = asyncio.Lock()
    async with self._lock:
      try:
        samples = await asyncio.to_thread(
            self.sampler.generate,
            [prompt] * params.n,
            params=params,
            stop_token_ids=self._stop_ids,
        )
      except Exception as e:  # pylint: disable=broad-exception-caught
        # Any sampler failure is a model-call failure for the caller.
        raise protocol.LLMError(
            f'{self.name}: generation failed: {type(e).__name__}: {e}'
        ) from e
    if len(samples) != params.n:
      raise protocol.LLMError(
          f'{self.name}: asked for {params.n} samples, got {len(samples)}'
      )
    return [self._completion(prompt, s) for s in samples]

  def _completion(self, prompt: tuple[int, ...], sample) -> protocol.Completion:
    ids = tuple(int(t) for t in sample.token_ids)
    logprobs = tuple(float(x) for x in sample.logprobs)
    if len(logprobs) != len(ids):
      raise protocol.LLMError(
          f'{self.name}: {len(ids)} tokens but {len(logprobs)} logprobs'
      )
    body = ids[:-1] if ids and ids[-1] in self._stop_ids else ids
    return protocol.Completion(
        text=self.prompts.decode(body),
        finish_reason=sample.finish_reason,
        token_ids=ids,
        logprobs=logprobs,
        policy_version=getattr(sample, 'policy_version', None),
        routed_experts=getattr(sample, 'routed_experts', None),
        prompt_token_ids=prompt,
        prompt_tokens=len(prompt),
    )
