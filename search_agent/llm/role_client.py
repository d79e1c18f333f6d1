"""One model role's client: its budget, stops, parse retries and counts.

`RoleLLM` wraps any `LLM` (an OpenAI-compatible endpoint, the in-process
sampler, a cache in front of either) for one role (judge, critic,
generator, ...). It caps every call's `max_tokens` at the role's budget,
adds the role's stop strings, and counts what the role did: calls,
completions, failed calls, replies cut at the budget, tokens, seconds, and
(through `chat_parsed`) replies that did not parse, re-asks and give-ups.
When the wrapped client is an `OpenAIClient` (or a cache in front of one),
its HTTP requests, attempts and retries are counted too.

`chat_parsed` is the one way a role reads a structured reply: a reply the
parser rejects (`ReplyFormatError`) is asked again (up to `parse_retries`
times, sampled at `retry_temperature` at least, so a greedy role does not
get the same reply back) and, when none parses, raised. A role never turns
an unparsable reply into a verdict.
"""

import asyncio
import dataclasses
import time
from typing import Any, Callable, Sequence, TypeVar

from search_agent.llm import protocol

T = TypeVar('T')

DEFAULT_PARSE_RETRIES = 2
RETRY_TEMPERATURE = 0.7
# Seeds of re-asks: seed + attempt * _RETRY_SEED_STRIDE, clear of the
# seed + i of a vote's i-th call.
_RETRY_SEED_STRIDE = 1_000_003


@dataclasses.dataclass(kw_only=True)
class RoleStats:
  """What one role did (mutable counters; `as_json` for reports).

  Attributes:
    calls: Chat calls the role made.
    completions: Completions it got back.
    failed_calls: Calls that raised `LLMError` (after the client's retries).
    cancelled_calls: Calls abandoned unfinished (e.g. the other votes of a
      judgment one of whose votes failed).
    length_finishes: Completions cut at the token budget.
    parse_failures: Replies the role's parser rejected.
    parse_retries: Calls re-asked because the reply did not parse.
    parse_errors: Parses given up after every re-ask (raised).
    prompt_tokens: Prompt tokens, as the backend counted them.
    completion_tokens: Generated tokens, where the backend gave ids.
    seconds: Wall time inside calls (concurrent calls add up).
  """

  calls: int = 0
  completions: int = 0
  failed_calls: int = 0
  cancelled_calls: int = 0
  length_finishes: int = 0
  parse_failures: int = 0
  parse_retries: int = 0
  parse_errors: int = 0
  prompt_tokens: int = 0
  completion_tokens: int = 0
  seconds: float = 0.0

  def as_json(self) -> dict[str, Any]:
    out = dataclasses.asdict(self)
    out['seconds'] = round(self.seconds, 3)
    return out


class RoleLLM:
  """An `LLM` for one role, with its budget, stops and counters.

  Attributes:
    name: The wrapped model's name.
    role: The role's name (as reports and errors name it).
    stats: What the role did.
    max_tokens: Most tokens one call may ask for (0 = as the role asks).
    stop: Stop strings added to every call.
    parse_retries: Re-asks of a reply that does not parse.
    retry_temperature: Lowest temperature of a re-ask.
  """

  def __init__(
      self,
      llm: protocol.LLM,
      role: str,
      *,
      max_tokens: int = 0,
      stop: Sequence[str] = (),
      parse_retries: int = DEFAULT_PARSE_RETRIES,
      retry_temperature: float = RETRY_TEMPERATURE,
  ):
    if max_tokens < 0 or parse_retries < 0:
      raise ValueError(
          f'role {role!r}: max_tokens ({max_tokens}) and parse_retries'
          f' ({parse_retries}) must be >= 0'
      )
    self.llm = llm
    self.name = llm.name
    self.role = role
    self.max_tokens = max_tokens
    self.stop = tuple(stop)
    self.parse_retries = parse_retries
    self.retry_temperature = retry_temperature
    self.stats = RoleStats()

  def params(self, params: protocol.SamplingParams) -> protocol.SamplingParams:
    """`params` within the role's budget and with its stops."""
    changes: dict[str, Any] = {}
    if self.max_tokens and params.max_tokens > self.max_tokens:
      changes['max_tokens'] = self.max_tokens
    if self.stop:
      changes['stop'] = tuple(dict.fromkeys(params.stop + self.stop))
    return dataclasses.replace(params, **changes) if changes else params

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    s = self.stats
    s.calls += 1
    start = time.perf_counter()
    try:
      out = await self.llm.chat(messages, self.params(params))
    except protocol.LLMError:
      s.failed_calls += 1
      raise
    except asyncio.CancelledError:
      s.cancelled_calls += 1
      raise
    finally:
      s.seconds += time.perf_counter() - start
    s.completions += len(out)
    for c in out:
      s.length_finishes += c.finish_reason == 'length'
      s.completion_tokens += len(c.token_ids or ())
    if out and out[0].prompt_tokens:
      s.prompt_tokens += out[0].prompt_tokens
    return out

  def report(self) -> dict[str, Any]:
    """The counters, with the HTTP client's and the cache's when present."""
    out = self.stats.as_json()
    out['model'] = self.name
    inner = self.llm
    while inner is not None:
      if hasattr(inner, 'hits') and hasattr(inner, 'misses'):
        out['cache_hits'] = inner.hits
      if hasattr(inner, 'requests') and hasattr(inner, 'attempts'):
        out['http_requests'] = inner.requests
        out['http_attempts'] = inner.attempts
        out['http_retries'] = inner.attempts - inner.requests
        out['http_failures'] = inner.failures
        out['base_url'] = inner.config.base_url
      inner = getattr(inner, 'wrapped', None)
    return out


def stats_of(llm: Any) -> RoleStats | None:
  """The counters of `llm` when it is a `RoleLLM`, else None."""
  return llm.stats if isinstance(llm, RoleLLM) else None


def _retry_params(params: protocol.SamplingParams, attempt: int, floor: float):
  seed = (params.seed or 0) + attempt * _RETRY_SEED_STRIDE
  return dataclasses.replace(
      params, seed=seed, temperature=max(params.temperature, floor)
  )


async def chat_parsed(
    llm: protocol.LLM,
    messages: Sequence[protocol.Message],
    params: protocol.SamplingParams,
    parse: Callable[[str], T],
    *,
    retries: int | None = None,
) -> T:
  """`parse` of one completion's text, re-asking while it does not parse.

  Args:
    llm: Any LLM; a `RoleLLM` gives the default retries and counts.
    messages: The conversation.
    params: Sampling of the first ask (n must be 1).
    parse: Text → value; raises `ReplyFormatError` for an unusable reply.
    retries: Re-asks (default: the role's `parse_retries`, else 2).

  Raises:
    ReplyFormatError: no reply parsed (the last reason in the message).
    LLMError: a call failed.
  """
  if params.n != 1:
    raise ValueError(f'chat_parsed asks for one completion, got n={params.n}')
  stats = stats_of(llm)
  if retries is None:
    retries = llm.parse_retries if isinstance(llm, RoleLLM) else (
        DEFAULT_PARSE_RETRIES)  # fmt: skip
  floor = llm.retry_temperature if isinstance(llm, RoleLLM) else (
      RETRY_TEMPERATURE)  # fmt: skip
  last = None
  for attempt in range(retries + 1):
    if attempt:
      if stats:
        stats.parse_retries += 1
      p = _retry_params(params, attempt, floor)
    else:
      p = params
    completions = await llm.chat(messages, p)
    if len(completions) != 1:
      raise protocol.LLMError(
          f'{llm.name!r} returned {len(completions)} completions, want 1'
      )
    try:
      return parse(completions[0].text)
    except protocol.ReplyFormatError as e:
      if stats:
        stats.parse_failures += 1
      last = e
  if stats:
    stats.parse_errors += 1
  role = f'role {llm.role!r} ' if isinstance(llm, RoleLLM) else ''
  raise type(last)(
      f'{role}model {llm.name!r}: no usable reply in {retries + 1}'
      f' attempt(s); last: {last}'
  ) from last
