"""An optional LLM reranker of search results (open-recipe.md).

"An LLM reranker uses the research context and each candidate's title, URL,
and snippet to order results by their usefulness for the agent's next
research step." Off by default (`RerankConfig.enabled`). The model sees the
top `max_candidates` results, numbered from 1, and replies with an order;
the candidates it leaves out keep their relative order after the ones it
ranked, and results past `max_candidates` follow unchanged.

A failed call (LLMError, or a reply with no usable order) raises
`RerankError` unless `on_error='keep_order'`, in which case the retrieval
order is kept and the reason is recorded in `RerankResult.fallback`.
"""

import dataclasses
import re
from typing import Protocol, Sequence, TypeVar

from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.llm.prompts import prompt as prompt_lib

ON_ERROR = ('raise', 'keep_order')
_THINK_RE = re.compile(r'<think>.*?</think>', re.S)
_LIST_RE = re.compile(r'\[\s*\d+(?:\s*,\s*\d+)+\s*,?\s*\]')
_ORDER_LINE_RE = re.compile(r'^\s*(?:[A-Za-z ]{1,30}:)?[\W_]*\d+(?:[\W_]+\d+)*')
_INT_RE = re.compile(r'\d+')


class RerankError(RuntimeError):
  """The reranker could not produce an order and is configured to raise."""


class Candidate(Protocol):
  title: str
  url: str
  snippet: str


C = TypeVar('C', bound=Candidate)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RerankConfig:
  """LLM reranker config_lib.

  Attributes:
    enabled: Rerank search results (the seed's pipeline; off by default so
      the embedded environment needs no auxiliary model).
    max_candidates: Results shown to the model per query; the tool asks the
      engine for this many and keeps the top k after reranking.
    snippet_chars: Snippet characters per candidate in the prompt.
    on_error: 'raise' (a failed rerank is an error) or 'keep_order' (keep
      the retrieval order and record why).
    prompt: Prompt file name under search_agent/llm/prompts/.
    temperature: Sampling temperature of the reranking call.
    max_tokens: Token budget of the reply (reasoning models need more).
  """

  enabled: bool = False
  max_candidates: int = 20
  snippet_chars: int = 400
  on_error: str = 'raise'
  prompt: str = 'rerank.txt'
  temperature: float = 0.0
  max_tokens: int = 1024

  def __post_init__(self):
    if self.on_error not in ON_ERROR:
      raise ValueError(f'on_error must be one of {ON_ERROR}: {self.on_error!r}')
    if self.max_candidates < 1:
      raise ValueError(f'max_candidates must be >= 1: {self.max_candidates}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class RerankResult:
  """What one rerank call did.

  Attributes:
    order: Candidate indices (0-based) best first, a permutation.
    ranked_by_model: How many of them the model itself placed.
    fallback: Why the retrieval order was kept, or None.
    reply: The model's raw reply ('' when the call failed).
  """

  order: tuple[int, ...]
  ranked_by_model: int
  fallback: str | None = None
  reply: str = ''


def parse_order(reply: str, n: int) -> tuple[tuple[int, ...], int]:
  """Reads a ranking of n candidates (numbered from 1) from a model reply.

  Reasoning in `<think>` blocks is ignored. The last bracketed list of two
  or more numbers (`[3, 1, 2]`) wins; else the first line that starts with
  numbers (an optional short `Label:` prefix allowed); else every number in
  the reply. Numbers out of range and repeats are dropped; candidates never
  named follow in their original order.

  Args:
    reply: The model's text.
    n: Number of candidates.

  Returns:
    (0-based permutation of range(n), how many the reply itself placed).

  Raises:
    ValueError: if the reply names no candidate.
  """
  text = _THINK_RE.sub(' ', reply)
  if '<think>' in text:
    text = ''  # unterminated reasoning: no answer was given
  text = text.split('</think>')[-1]
  lists = _LIST_RE.findall(text)
  if lists:
    source = lists[-1]
  else:
    lines = [l for l in text.splitlines() if _ORDER_LINE_RE.match(l)]
    source = lines[0] if lines else text
  order, seen = [], set()
  for token in _INT_RE.findall(source):
    i = int(token) - 1
    if 0 <= i < n and i not in seen:
      seen.add(i)
      order.append(i)
  if not order:
    raise ValueError(
        f'the reply names no candidate number in 1..{n}: {reply!r:.200}'
    )
  placed = len(order)
  order.extend(i for i in range(n) if i not in seen)
  return tuple(order), placed


def format_candidates(candidates: Sequence[Candidate], chars: int) -> str:
  """Candidates as numbered blocks of title, URL and snippet."""
  blocks = []
  for i, c in enumerate(candidates, 1):
    snippet = ' '.join(c.snippet.split())[:chars]
    blocks.append(f'[{i}] {c.title}\nURL: {c.url}\nSnippet: {snippet}')
  return '\n\n'.join(blocks)


class LLMReranker:
  """Orders search results with an auxiliary LLM."""

  def __init__(self, llm: protocol.LLM, config: RerankConfig = RerankConfig()):
    self.llm = llm
    self.config = config
    self.prompt = prompt_lib.load(config.prompt)

  async def rerank(
      self, context: str, query: str, candidates: Sequence[C]
  ) -> tuple[list[C], RerankResult]:
    """Reorders candidates for one query.

    Args:
      context: The research context (e.g. the task question).
      query: The search query that produced the candidates.
      candidates: Results in retrieval order.

    Returns:
      (the reordered candidates, what was done).

    Raises:
      RerankError: if the call or its parsing failed and on_error='raise'.
    """
    head = list(candidates[: self.config.max_candidates])
    tail = list(candidates[self.config.max_candidates :])
    if len(head) < 2:
      return list(candidates), RerankResult(
          order=tuple(range(len(head))), ranked_by_model=0
      )
    message = self.prompt.render(
        context=context,
        query=query,
        candidates=format_candidates(head, self.config.snippet_chars),
    )
    params = protocol.SamplingParams(
        temperature=self.config.temperature, max_tokens=self.config.max_tokens
    )
    reply = ''

    def parse(text: str) -> tuple[tuple[int, ...], int]:
      nonlocal reply
      reply = text
      try:
        return parse_order(text, len(head))
      except ValueError as e:
        raise protocol.ReplyFormatError(str(e)) from e

    try:
      # A reply naming no candidate is asked again (the role's parse
      # retries when self.llm is a RoleLLM, else 2), counted.
      order, placed = await role_client.chat_parsed(
          self.llm, [{'role': 'user', 'content': message}], params, parse
      )
    except protocol.LLMError as e:
      reason = f'{type(e).__name__}: {e}'
      if self.config.on_error == 'raise':
        raise RerankError(
            f'reranking with {self.llm.name!r} failed ({reason}); fix the'
            " reranker model or set on_error='keep_order'"
        ) from e
      keep = tuple(range(len(head)))
      return list(candidates), RerankResult(
          order=keep, ranked_by_model=0, fallback=reason, reply=reply
      )
    result = RerankResult(order=order, ranked_by_model=placed, reply=reply)
    return [head[i] for i in order] + tail, result
