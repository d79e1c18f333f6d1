"""Records and errors of the rollout engine (no JAX, no MaxText).

The HTTP layer (search_agent/serving) maps the errors to status codes:
RequestError 400, ContextTooLongError 400, UnknownIdError 404,
DuplicateIdError 409, QueueFullError 429 (with Retry-After), WeightsError
400/409 (the old weights keep serving).
"""

import dataclasses
from typing import Any, Callable

FINISH_REASONS = ('stop', 'length', 'abort')
# A positive temperature below MIN is refused: it samples as greedy (0)
# would, and near 1e-38 it scales float32 logits to inf (NaN logprobs).
# Above MAX the distribution is uniform to float32 precision.
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-5, 1e4


class EngineError(ValueError):
  """A request the engine cannot take (the caller's fault)."""


class RequestError(EngineError):
  """Malformed or out-of-range request fields."""


class ContextTooLongError(RequestError):
  """The prompt is longer than the engine's max_context."""


class UnknownIdError(EngineError):
  """No such request or session."""


class DuplicateIdError(EngineError):
  """A request with this id is already in flight."""


class QueueFullError(EngineError):
  """Every slot is busy and the waiting queue is full: retry later."""

  def __init__(self, message: str, retry_after_s: float):
    super().__init__(message)
    self.retry_after_s = retry_after_s


class WeightsError(EngineError):
  """New weights could not be loaded; the old ones keep serving."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class EngineConfig:
  """Slots, lengths and scheduling of the engine.

  Attributes:
    slots: Decode rows (requests generating at once; also the most sessions
      whose KV is kept).
    max_context: Longest prompt (tokens), also the most context a session
      keeps between turns.
    max_new_tokens: Most tokens one request may generate.
    max_chunk: Most new prompt tokens appended to a cached context by
      extend forwards (`engine_core.EngineCore.extend`: one, or pieces that
      fit its extend_budget; it bounds the extend's compiled lengths); a
      longer new chunk re-prefills the whole context in MaxText's prefill
      mode.
    prefill_min_tokens: A fresh prompt this long or longer is prefilled in
      one prefill-mode forward; a shorter one goes through an extend.
    steps_per_call: Decode steps per device call (requests join and leave
      between calls).
    max_queue: Requests waiting for a slot before new ones get 429.
    retry_after_s: Retry-After sent with a 429.
    prefills_per_step: Most prefill-mode forwards between two decode calls
      (so a burst of long prompts does not stall decoding).
    top_logprobs: Most alternatives a request may ask for per generated
      token (OpenAI `top_logprobs`); when > 0 every decode step computes
      this many (a top-k over the vocabulary per row), 0 computes none.
    prefill_chunk: Chunked prefill. When > 0, a prompt that would take a
      prefill-mode forward is instead appended to its slot's context by
      extend forwards, at most this many tokens (over all such prompts)
      between two decode blocks, so running decodes wait for one chunk, not
      for a whole long prompt. 0 prefills it in one forward.
  """

  slots: int = 8
  max_context: int = 2048
  max_new_tokens: int = 512
  max_chunk: int = 256
  prefill_min_tokens: int = 32
  steps_per_call: int = 8
  max_queue: int = 256
  retry_after_s: float = 1.0
  prefills_per_step: int = 2
  prefill_chunk: int = 0
  top_logprobs: int = 0

  @property
  def max_extend(self) -> int:
    """Most tokens of one extend row."""
    return max(self.max_chunk, self.prefill_min_tokens)

  @property
  def ring_len(self) -> int:
    return self.max_new_tokens + self.max_chunk

  def __post_init__(self):
    if min(self.slots, self.max_new_tokens, self.max_chunk) < 1:
      raise RequestError('slots, max_new_tokens and max_chunk must be >= 1')
    if self.prefill_chunk < 0 or self.top_logprobs < 0:
      raise RequestError('prefill_chunk and top_logprobs must be >= 0')
    if self.ring_len > self.max_context:
      raise RequestError(
          f'max_new_tokens + max_chunk = {self.ring_len} must be <='
          f' max_context {self.max_context}'
      )


@dataclasses.dataclass(frozen=True, kw_only=True)
class GenerateRequest:
  """One token-level generation.

  Attributes:
    input_ids: The whole context (a session's earlier turns included).
    temperature: 0 = greedy.
    top_p: Nucleus mass (1.0 = off, as RL wants).
    max_new_tokens: Most tokens to generate.
    stop_token_ids: Generation ends after one of these (kept).
    stop_strings: Or after the decoded text ends with one of these (kept).
    seed: Sampling seed (token i uses fold_in(seed, its position)).
    session_id: Keeps this context's KV for the session's next turn.
    request_id: For /abort; unique among requests in flight.
    top_logprobs: Most likely alternatives to return per generated token
      (at most the engine's top_logprobs).
  """

  input_ids: tuple[int, ...]
  temperature: float = 1.0
  top_p: float = 1.0
  max_new_tokens: int = 128
  stop_token_ids: tuple[int, ...] = ()
  stop_strings: tuple[str, ...] = ()
  seed: int = 0
  session_id: str | None = None
  request_id: str | None = None
  top_logprobs: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class GenerateResult:
  """What a request generated.

  Attributes:
    token_ids: Generated tokens (a stop token included).
    logprobs: Sampling log-probability of each (see engine_core).
    versions: Policy version of the weights that generated each token.
    finish_reason: One of FINISH_REASONS.
    cached_tokens: Prompt tokens whose KV was reused (not recomputed).
    routed_experts: [n, layers, top_k] experts of input_ids[routed_from:]
      plus the generated tokens but the last (the tokens fed this call), or
      None when the model does not record routing.
    routed_from: Index in input_ids where routed_experts starts.
    request_id: The request's id.
    top_logprobs: Per generated token, its request's top_logprobs most
      likely (token, logprob) pairs, most likely first; () when not asked.
  """

  token_ids: tuple[int, ...]
  logprobs: tuple[float, ...]
  versions: tuple[int, ...]
  finish_reason: str
  cached_tokens: int
  routed_experts: Any
  routed_from: int
  request_id: str
  top_logprobs: tuple[tuple[tuple[int, float], ...], ...] = ()


Callback = Callable[[GenerateResult | BaseException], None]
