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
"""

from typing import Any

from search_agent.agent import trajectory
from search_agent.llm import protocol


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
