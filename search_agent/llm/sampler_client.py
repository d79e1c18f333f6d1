"""`LLM` over the in-process JAX sampler (search_agent/model/sampler.py).

The adapter turns the chat into prompt token ids with a `PromptRenderer`
(search_agent/chat/chat_prompts.py wraps the one renderer; the llm layer
does not import the agent layer), asks the sampler for tokens, and returns
completions that carry the prompt ids, the generated ids (the closing
end-of-turn token included, as the renderer puts loss on it), the per-token
sampling logprobs, the policy version and the routing record, so
trajectories are token-exact. The text is the decoded generation without
the end-of-turn token.

Batching: concurrent chats (many trajectories at once) are gathered for
`batch_wait_s` into one `Sampler.generate` call of up to `batch_size`
prompts with the same temperature, top-p and stop strings. The batch runs to
the largest `max_tokens` asked; each completion is then cut at its own
`max_tokens` ('length'), which is exactly what a separate call would have
produced, since each token depends only on the tokens before it. One seed
per batch (the first request's). Generation runs in a worker thread, one
batch at a time, so the event loop keeps serving tool calls meanwhile. A
caller cancelled mid-batch (an aborted rollout) gets nothing; the others in
its batch still get their samples. A
prompt longer than the sampler's `max_prompt_len` raises ContextLengthError.
"""

import asyncio
import dataclasses
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


def render_prompt(
    prompts: PromptRenderer, messages: Sequence[protocol.Message], name: str
) -> tuple[int, ...]:
  """The chat's prompt ids; an unrenderable chat is an LLMError naming
  the client `name`."""
  try:
    return tuple(prompts.prompt_ids(messages))
  except ValueError as e:
    raise protocol.LLMError(f'{name}: cannot render the chat: {e}') from e


class TokenSampler(Protocol):
  """What the adapter needs from search_agent.model.sampler.Sampler."""

  batch_size: int
  max_prompt_len: int

  def generate(
      self,
      prompts: Sequence[Sequence[int]],
      *,
      temperature: float,
      top_p: float,
      max_new_tokens: int | None,
      stop_token_ids: Sequence[int],
      stop_strings: Sequence[str],
      decode_fn: Any,
      seed: int,
  ) -> list[Any]:
    ...


@dataclasses.dataclass
class _Request:
  prompt: tuple[int, ...]
  params: protocol.SamplingParams
  future: asyncio.Future

  @property
  def key(self) -> tuple[Any, ...]:
    p = self.params
    return (p.temperature, p.top_p, tuple(p.stop))


class SamplerLLM:
  """The in-process sampler behind the `LLM` protocol.

  Attributes:
    batches: Sizes of the generate calls made (for tests and manifests).
  """

  def __init__(
      self,
      sampler: TokenSampler,
      prompts: PromptRenderer,
      *,
      name: str = 'in-process-sampler',
      batch_wait_s: float = 0.005,
  ):
    self.name = name
    self.sampler = sampler
    self.prompts = prompts
    self.batches: list[int] = []
    self._stop_ids = tuple(prompts.stop_token_ids)
    self._wait_s = batch_wait_s
    self._queue: list[_Request] = []
    self._worker: asyncio.Task | None = None

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    prompt = render_prompt(self.prompts, messages, self.name)
    if len(prompt) > self.sampler.max_prompt_len:
      raise protocol.ContextLengthError(
          f'{self.name}: prompt of {len(prompt)} tokens is longer than the'
          f' sampler max_prompt_len {self.sampler.max_prompt_len}'
      )
    loop = asyncio.get_running_loop()
    requests = [
        _Request(prompt=prompt, params=params, future=loop.create_future())
        for _ in range(params.n)
    ]
    self._queue.extend(requests)
    if self._worker is None or self._worker.done():
      self._worker = loop.create_task(self._work())
    samples = await asyncio.gather(*(r.future for r in requests))
    return [self._completion(prompt, s, params.max_tokens) for s in samples]

  async def _work(self) -> None:
    """Runs batches while requests are queued."""
    while self._queue:
      await asyncio.sleep(self._wait_s)  # let concurrent chats join
      first = self._queue[0]
      batch = [r for r in self._queue if r.key == first.key]
      batch = batch[: self.sampler.batch_size]
      taken = {id(r) for r in batch}
      self._queue = [r for r in self._queue if id(r) not in taken]
      p = first.params
      try:
        samples = await asyncio.to_thread(
            self.sampler.generate,
            [r.prompt for r in batch],
            temperature=p.temperature,
            top_p=p.top_p,
            max_new_tokens=max(r.params.max_tokens for r in batch),
            stop_token_ids=self._stop_ids,
            stop_strings=tuple(p.stop),
            decode_fn=self.prompts.decode,
            seed=p.seed or 0,
        )
        if len(samples) != len(batch):
          raise ValueError(f'{len(batch)} prompts, {len(samples)} samples')
      except Exception as e:  # pylint: disable=broad-exception-caught
        # Any sampler failure is a model-call failure for every caller.
        err = protocol.LLMError(
            f'{self.name}: generation failed: {type(e).__name__}: {e}'
        )
        for r in batch:
          if not r.future.done():  # a cancelled caller needs no reply
            r.future.set_exception(err)
        continue
      self.batches.append(len(batch))
      for r, s in zip(batch, samples):
        if not r.future.done():
          r.future.set_result(s)

  def _completion(
      self, prompt: tuple[int, ...], sample: Any, max_tokens: int
  ) -> protocol.Completion:
    ids = tuple(int(t) for t in sample.token_ids)
    logprobs = tuple(float(x) for x in sample.logprobs)
    if len(logprobs) != len(ids):
      raise protocol.LLMError(
          f'{self.name}: {len(ids)} tokens but {len(logprobs)} logprobs'
      )
    finish = sample.finish_reason
    if len(ids) > max_tokens:  # the batch ran longer than this request
      ids, logprobs, finish = ids[:max_tokens], logprobs[:max_tokens], 'length'
    routes = getattr(sample, 'routed_experts', None)
    if routes is not None:  # [prompt + generated - 1, layers, top_k]
      routes = routes[: len(prompt) + len(ids) - 1]
    body = ids[:-1] if ids and ids[-1] in self._stop_ids else ids
    return protocol.Completion(
        text=self.prompts.decode(body),
        finish_reason=finish,
        token_ids=ids,
        logprobs=logprobs,
        policy_version=getattr(sample, 'policy_version', None),
        routed_experts=routes,
        prompt_token_ids=prompt,
        prompt_tokens=len(prompt),
    )
