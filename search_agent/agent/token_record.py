"""Assembles token-exact `TokenRecord` segments from the calls of one run.

When the backend returns prompt and generated token ids for every call, a
segment is a prompt exactly as the sampler received it, then for each call
the generated tokens (loss 1 when the turn is trainable, with their sampling
logprobs and policy version) and the prompt tokens the next call added
(observations, template tokens: loss 0, version -1), as long as each prompt
extends the segment token for token. A context policy that rewrites earlier
turns (the sliding window, discard-all, a summary) or a chat template that
drops earlier reasoning starts a new segment at that call, beginning with its
whole prompt. Every generated token is in exactly one segment, with the
context the sampler saw, so RL trains a rollout of any length (`segments`);
`record` is the one segment of a run that never slid. The per-call
generations (`generations`: message index, generated ids, sampling
logprobs, policy version) are kept too.

`rendered_segments` is the same assembly for a trajectory without sampled
tokens (an SFT demonstration): each assistant turn as the canonical
rendering of its text after the prompt the context policy would have shown
it. SFT trains these (train/data.py), so a demonstration trains exactly the
segments RL trains of a rollout with those turns: one implementation.
"""

from typing import Any, Callable, Sequence

from search_agent.agent import trajectory
from search_agent.chat import chat_template
from search_agent.chat import renderer
from search_agent.llm import protocol


class SegmentError(ValueError):
  """A trajectory cannot be assembled into segments (says why)."""


class TokenAssembler:
  """Collects token ids, loss mask, logprobs and versions call by call.

  Attributes:
    note: Why there is no record, or what is approximate; '' when exact.
    generations: Per call with tokens: {'message', 'token_ids', 'logprobs',
      'version'}; 'message' is the assistant turn's index in the messages.
    slides: Calls whose prompt did not extend the segment before them (each
      started a new segment).
  """

  def __init__(self):
    self.note = ''
    self.slides = 0
    self._ok = True
    self._closed: list[trajectory.TokenRecord] = []
    self._ids: list[int] = []
    self._mask: list[int] = []
    self._logprobs: list[float] = []
    self._versions: list[int] = []
    self._calls = 0
    self.generations: list[dict[str, Any]] = []

  def add(
      self,
      completion: protocol.Completion,
      *,
      trainable: bool,
      message: int = -1,
  ) -> None:
    """Adds one call's prompt delta and generated tokens."""
    self._calls += 1
    if completion.token_ids is not None:
      self.generations.append(
          {
              'message': message,
              'token_ids': list(completion.token_ids),
              'logprobs': list(completion.logprobs or ()),
              'version': completion.policy_version,
          }
      )
    if not self._ok:
      return
    prompt, generated = completion.prompt_token_ids, completion.token_ids
    if prompt is None or generated is None:
      self._stop('the backend returned no prompt/generated token ids')
      return
    n = len(self._ids)
    if tuple(prompt[:n]) != tuple(self._ids):
      # The context policy or chat template rewrote earlier tokens: this
      # call's prompt starts a new segment.
      self._closed.append(self._current())
      self._ids, self._mask, self._logprobs, self._versions = [], [], [], []
      self.slides += 1
      self.note = self.note or (
          f'the prompt of call {self._calls} does not extend the previous'
          ' token sequence (context policy or chat template rewrote it): a'
          ' new segment starts there'
      )
      n = 0
    delta = prompt[n:]
    self._extend(delta, [0] * len(delta), [0.0] * len(delta), -1)
    logprobs = completion.logprobs
    if logprobs is None:
      self.note = 'no sampling logprobs from the backend (recorded as 0.0)'
      logprobs = [0.0] * len(generated)
    version = completion.policy_version
    if version is None:
      version = -1
      self.note = self.note or 'no policy version from the backend (-1)'
    self._extend(
        generated, [int(trainable)] * len(generated), logprobs, version
    )

  def _extend(self, ids, mask, logprobs, version) -> None:
    self._ids.extend(int(i) for i in ids)
    self._mask.extend(mask)
    self._logprobs.extend(float(x) for x in logprobs)
    self._versions.extend([version] * len(ids))

  def _stop(self, why: str) -> None:
    self._ok = False
    self.note = why

  def continuation(self) -> tuple[int, tuple[int, ...]] | None:
    """(message index of the last sampled turn, the token ids through it),
    or None when there is none or the record is no longer exact."""
    if not self._ok or not self.generations:
      return None
    return self.generations[-1]['message'], tuple(self._ids)

  def _current(self) -> trajectory.TokenRecord:
    return trajectory.TokenRecord(
        token_ids=tuple(self._ids),
        loss_mask=tuple(self._mask),
        logprobs=tuple(self._logprobs),
        versions=tuple(self._versions),
    )

  def segments(self) -> tuple[trajectory.TokenRecord, ...]:
    """Every segment in call order; () without token ids from the backend."""
    if not self._ok or not self._ids:
      return ()
    return (*self._closed, self._current())

  def record(self) -> trajectory.TokenRecord | None:
    """The token record of a run that never slid (one segment), else None."""
    segments = self.segments()
    return segments[0] if len(segments) == 1 else None


class _MemoTokenizer:
  """A tokenizer that encodes each distinct text once (rendering every
  prompt of a trajectory re-encodes the same turns)."""

  def __init__(self, tokenizer):
    self._tok = tokenizer
    self._ids: dict[str, list[int]] = {}

  def token_id(self, token: str) -> int:
    return self._tok.token_id(token)

  def encode(self, text: str) -> list[int]:
    return self.encode_batch([text])[0]

  def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
    new = [t for t in dict.fromkeys(texts) if t not in self._ids]
    if new:
      self._ids.update(zip(new, map(list, self._tok.encode_batch(new))))
    return [self._ids[t] for t in texts]


def rendered_segments(
    messages: Sequence[trajectory.Turn],
    view: Callable[[Sequence[trajectory.Turn]], Sequence[trajectory.Turn]],
    tokenizer: Any,
    template: chat_template.ChatTemplate = chat_template.CHATML,
) -> tuple[trajectory.TokenRecord, ...]:
  """The segments of `messages` as RL assembles them from a sampler that
  sampled each assistant turn's canonical tokens.

  Assistant turn i was generated after the prompt
  `render(view(messages[:i]), add_generation_prompt=True)`; its tokens are
  the rendering of its text through the turn end (loss 1 when trainable).
  `TokenAssembler` then starts a new segment wherever a prompt does not
  extend the tokens so far, as it does for rollouts. Tool turns after the
  last assistant turn carry no loss and are left out. Versions are -1 and
  logprobs 0.0 (nothing was sampled).

  Args:
    messages: A trajectory.
    view: The context policy's view function (context.policy_view).
    tokenizer: The tokenizer of `renderer.render`.
    template: The chat template.

  Returns:
    The segments, in order; () when there is no assistant turn.

  Raises:
    SegmentError: A turn's prompt is not a token prefix of its rendering
      with the turn (the template re-tokenizes across the boundary).
  """
  tok = _MemoTokenizer(tokenizer)
  sep = len(tok.encode(template.turn_separator))
  asm = TokenAssembler()
  for i, m in enumerate(messages):
    if m.role != 'assistant':
      continue
    context = list(view(messages[:i]))
    prompt = renderer.render(
        context, tok, add_generation_prompt=True, template=template
    ).token_ids
    full = renderer.render([*context, m], tok, template=template)
    end = full.turn_spans[-1].end - sep
    if full.token_ids[: len(prompt)] != prompt:
      raise SegmentError(
          f'messages[{i}]: the prompt is not a token prefix of its rendering'
          ' with the turn'
      )
    generated = full.token_ids[len(prompt) : end]
    asm.add(
        protocol.Completion(
            text='',
            token_ids=generated,
            logprobs=(0.0,) * len(generated),
            prompt_token_ids=prompt,
            policy_version=-1,
        ),
        trainable=m.trainable,
        message=i,
    )
  return asm.segments()
