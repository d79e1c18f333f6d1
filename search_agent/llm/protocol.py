"""The LLM protocol shared by every role (policy, judge, summarizer, ...).

Every backend (OpenAI-compatible HTTP, the in-process JAX sampler, the
scripted client for harness tests) implements `LLM.chat`.
"""

import dataclasses
from typing import Any, Protocol, Sequence


class LLMError(RuntimeError):
  """A model call failed (transport, timeout, malformed reply).

  Callers must surface it (e.g. a judge failure is an error, never a "no").
  """


class ContextLengthError(LLMError):
  """The prompt plus requested output does not fit the model's context."""


class ReplyFormatError(LLMError):
  """The model replied, but not in the format its prompt asks for.

  Roles retry it (`llm.role_client.chat_parsed`) and count it; a reply that
  never parses is this error, never a default verdict.
  """


@dataclasses.dataclass(frozen=True, kw_only=True)
class SamplingParams:
  """Sampling parameters for one chat call.

  Attributes:
    temperature: Softmax temperature; 0 means greedy.
    top_p: Nucleus sampling mass.
    max_tokens: Maximum number of generated tokens.
    stop: Stop strings; generation ends after the first one (kept in text).
    seed: Optional sampling seed.
    n: Number of independent samples.
  """

  temperature: float = 1.0
  top_p: float = 1.0
  max_tokens: int = 32_768
  stop: tuple[str, ...] = ()
  seed: int | None = None
  n: int = 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class Completion:
  """One sampled completion.

  Attributes:
    text: Generated text (reasoning included if the backend inlines it).
    finish_reason: 'stop', 'length' or a backend-specific reason.
    token_ids: Generated token ids, when the backend gives them.
    logprobs: Per-token sampling log-probabilities, aligned with token_ids.
    policy_version: Weight version that produced every token, if known.
    routed_experts: Optional routing record [tokens, layers, top_k].
    prompt_token_ids: Prompt token ids, when the backend gives them.
    prompt_tokens: Prompt length in tokens as the backend counted it (e.g.
      OpenAI `usage.prompt_tokens`), when known.
  """

  text: str
  finish_reason: str = 'stop'
  token_ids: tuple[int, ...] | None = None
  logprobs: tuple[float, ...] | None = None
  policy_version: int | None = None
  routed_experts: Any = None
  prompt_token_ids: tuple[int, ...] | None = None
  prompt_tokens: int | None = None


Message = dict[str, Any]

# Key of an assistant message: the conversation's exact token ids through
# the end of that turn, as the policy sampled them. A token-level backend
# (the in-process sampler, the rollout server) continues the next prompt
# from them instead of re-rendering the turn's text, so a reply whose text
# would tokenize differently keeps the trajectory one token prefix chain
# (the RL learner trains on those ids). Other backends ignore it.
SAMPLED_TOKEN_IDS = 'sampled_token_ids'
"""A chat message: {'role': 'system'|'user'|'assistant'|'tool', 'content': str,
...}; see search_agent/agent/trajectory.py for the full schema."""


class LLM(Protocol):
  """A chat model. Implementations must be safe to call concurrently."""

  name: str

  async def chat(
      self, messages: Sequence[Message], params: SamplingParams
  ) -> list[Completion]:
    """Returns `params.n` completions or raises LLMError."""
    ...
