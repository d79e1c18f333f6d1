"""The frozen Verifier: task validity, parametric knowledge, answer judging.

Two implementations of one interface:
  * `LLMVerifier`: the seed's role, any `llm/` LLM (a frozen copy of the
    initial model behind `python -m search_agent.serving`, or an
    OpenAI-compatible endpoint); prompts in selfplay/prompts/verify_*.md;
    a reply that is not the asked-for JSON raises `VerifierError` (a judge
    failure is an error, never a "no": the worker retries the seed).
  * `ProgrammaticVerifier`: a deterministic stand-in for CI and `:tiny`
    (no LLM), named as such in the manifest: valid = the reference answer
    and every chain document occur in what the Proposer saw, and the
    answer is not in the question; parametric = the question leaks the
    answer; correct = normalized exact match.
"""

import json
import re
from typing import Any, Protocol, Sequence

from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.rewards import answer_match
from search_agent.selfplay import proposal as proposal_lib

PROGRAMMATIC = 'programmatic'
MANIFEST = {
    'name': PROGRAMMATIC,
    'note': (
        'deterministic stand-in for the frozen LLM Verifier: validity ='
        ' answer and chain documents grounded in the proposer observations,'
        ' answer not in the question; parametric = answer leaked in the'
        ' question; correctness = normalized exact match'
    ),
}
_JSON = re.compile(r'\{.*\}', re.S)


class VerifierError(protocol.ReplyFormatError):
  """The Verifier's reply could not be read (the seed is retried)."""


class Verifier(Protocol):
  """What the filters and the solver scoring ask the Verifier."""

  manifest: dict[str, Any]

  async def valid(
      self, prop: proposal_lib.Proposal, observations: Sequence[str]
  ) -> bool:
    """Question valid, answer supported by the trace, chain sound."""
    ...

  async def knows(self, question: str, reference: str) -> bool:
    """Whether it answers `question` correctly without tools."""
    ...

  async def correct(self, question: str, reference: str, response: str) -> bool:
    """z: whether `response` answers `question` (judged on `reference`)."""
    ...


def _norm_in(needle: str, haystack: str) -> bool:
  n = answer_match.normalize_answer(needle)
  return bool(n) and f' {n} ' in f' {answer_match.normalize_answer(haystack)} '


class ProgrammaticVerifier:
  """The deterministic stand-in (see the module docstring)."""

  def __init__(self):
    self.manifest: dict[str, Any] = dict(MANIFEST)

  async def valid(self, prop, observations) -> bool:
    seen = '\n'.join(observations)
    return (
        _norm_in(prop.answer, seen)
        and all(_norm_in(e.doc, seen) for e in prop.chain)
        and not _norm_in(prop.answer, prop.question)
    )

  async def knows(self, question: str, reference: str) -> bool:
    return _norm_in(reference, question)

  async def correct(self, question, reference, response) -> bool:
    del question
    return answer_match.exact_match(response, reference)


def _json_field(text: str, field: str) -> bool:
  m = _JSON.search(text)
  try:
    value = json.loads(m.group(0))[field] if m else None
  except (json.JSONDecodeError, KeyError, TypeError):
    value = None
  if not isinstance(value, bool):
    raise VerifierError(f'verifier reply has no boolean {field!r}: {text:.200}')
  return value


class LLMVerifier:
  """The frozen Verifier through any `llm/` LLM (never updated)."""

  def __init__(
      self, llm: protocol.LLM, max_tokens: int = 1024, trace_chars: int = 8000
  ):
    self.llm, self.max_tokens, self.trace_chars = llm, max_tokens, trace_chars
    self.manifest: dict[str, Any] = {'name': 'llm', 'model': llm.name}

  async def _ask(self, prompt: str) -> str:
    params = protocol.SamplingParams(
        temperature=0.0, max_tokens=self.max_tokens
    )
    [out] = await self.llm.chat([{'role': 'user', 'content': prompt}], params)
    return out.text

  async def _ask_field(self, prompt: str, field: str) -> bool:
    """The boolean `field` of the reply; an unusable reply is asked again
    (`role_client.chat_parsed`) and raises VerifierError when none parses."""
    params = protocol.SamplingParams(
        temperature=0.0, max_tokens=self.max_tokens
    )
    return await role_client.chat_parsed(
        self.llm, [{'role': 'user', 'content': prompt}], params,
        lambda text: _json_field(text, field),
    )  # fmt: skip

  async def valid(self, prop, observations) -> bool:
    chain = '\n'.join(f'{i + 1}. [{e.doc}] {e.fact}' for i, e in
                      enumerate(prop.chain))  # fmt: skip
    trace = '\n---\n'.join(observations)[-self.trace_chars :]
    return await self._ask_field(
        proposal_lib.load('verify_validity.md').render(
            chain=chain, question=prop.question, answer=prop.answer,
            trace=trace,
        ),
        'valid',
    )  # fmt: skip

  async def knows(self, question: str, reference: str) -> bool:
    text = await self._ask(
        proposal_lib.load('verify_closed_book.md').render(question=question)
    )
    m = re.search(r'<answer>(.*?)</answer>', text, re.S)
    guess = (m.group(1) if m else text).strip()
    return await self.correct(question, reference, guess)

  async def correct(self, question, reference, response) -> bool:
    if answer_match.exact_match(response, reference):
      return True  # exact match first, as the RL answer judge
    if not (response or '').strip():
      return False
    return await self._ask_field(
        proposal_lib.load('verify_answer.md').render(
            question=question, reference=reference, response=response
        ),
        'correct',
    )
