"""Iris partial rollouts in the loop: interrupt, keep the prefix, resume.

Once the update being assembled has enough groups, the learner writes
`<workdir>/learner/interrupt.json` = {'until_version': v + 1} (the version
it is about to publish). A worker's `InterruptGate` sees it while the
weight store's newest version is older than that; then every rollout's
`PartialPolicy`:
  * holds its next request (between requests: the in-process sampler's
    interruption point) until the new version is published;
  * with the rollout server, also aborts its request in flight
    (`POST /abort {all: true}`: the server returns what it generated with
    finish_reason 'abort'); that partial output is dropped and the same
    request (the committed prefix) is sent again under the new version.
Each rollout's committed prefix lives in a `RolloutForest` (one node per
context delta and per completed generation, with its version), so a
resumed trajectory is a path that splices prefixes sampled by different
versions; the learner corrects those tokens with truncated IS
(`loss.objective='tis'`, cap `rollout.tis_cap`) from the recorded
per-token logprobs and versions. The rollout's coroutine (the agent's
messages) is the in-memory state: a worker killed while holding loses the
held rollouts' progress (their group is retried, as any lost claim).
"""

import asyncio
import json
import os
import time
from typing import Awaitable, Callable

from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import rollout_forest
from search_agent.train.rl import weight_sync


def interrupt_path(workdir: str) -> str:
  return os.path.join(workdir, 'learner', 'interrupt.json')


def write_interrupt(workdir: str, until_version: int) -> None:
  """The learner: hold rollouts until `until_version` is published."""
  path = interrupt_path(workdir)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  tmp = f'{path}.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    json.dump({'until_version': until_version, 'time': time.time()}, f)
  os.replace(tmp, path)


def clear_interrupt(workdir: str) -> None:
  """A (re)starting learner: no hold from a previous life."""
  try:
    os.unlink(interrupt_path(workdir))
  except FileNotFoundError:
    pass


class InterruptGate:
  """A worker's view of the learner's interrupt (file read every poll_s)."""

  def __init__(
      self,
      workdir: str,
      store: weight_sync.WeightStore,
      *,
      poll_s: float = 0.1,
  ):
    self.path, self.store, self.poll_s = interrupt_path(workdir), store, poll_s
    self.holds = 0  # requests held

  def active(self) -> bool:
    """True while the newest published version is older than the file's."""
    try:
      with open(self.path, encoding='utf-8') as f:
        until = int(json.load(f)['until_version'])
    except (FileNotFoundError, ValueError, KeyError):
      return False
    latest = self.store.latest_version()
    return latest is None or latest < until

  async def wait_clear(self) -> bool:
    """Waits while active; True when it had to wait (a held request)."""
    held = False
    while self.active():
      held = True
      await asyncio.sleep(self.poll_s)
    self.holds += held
    return held

  async def wait_active(self) -> None:
    while not self.active():
      await asyncio.sleep(self.poll_s)


class PartialPolicy:
  """One rollout's policy: gated requests, committed prefix in a forest.

  Attributes:
    forest: The rollout's message states (context and generation deltas).
    head: Node of the committed prefix (-1 before the first request).
    interruptions: Requests held or aborted and resent.
    dropped_tokens: Tokens of aborted requests thrown away.
  """

  def __init__(
      self,
      llm,
      gate: InterruptGate,
      abort: Callable[[], Awaitable[None]] | None = None,
  ):
    self.llm, self.gate, self.abort = llm, gate, abort
    self.name = getattr(llm, 'name', 'policy')
    self.forest = rollout_forest.RolloutForest()
    self.head = -1
    self.interruptions = 0
    self.dropped_tokens = 0

  def record(self) -> traj_lib.TokenRecord:
    """The spliced record of the committed prefix."""
    return self.forest.record(self.head) if self.head >= 0 else (
        rollout_forest.message_delta((), trainable=False)
    )  # fmt: skip

  def _commit(self, c) -> None:
    have = self.record().token_ids
    prompt = tuple(c.prompt_token_ids or ())
    if prompt[: len(have)] == have:  # extends the committed prefix
      ctx = prompt[len(have) :]
    else:  # the context was rewritten (sliding window): a new root
      self.head, ctx = -1, prompt
    if ctx:
      self.head = self.forest.add(
          self.head, rollout_forest.message_delta(ctx, trainable=False)
      )
    self.head = self.forest.add(
        self.head,
        rollout_forest.message_delta(
            tuple(c.token_ids or ()),
            trainable=True,
            logprobs=c.logprobs,
            version=-1 if c.policy_version is None else c.policy_version,
        ),
    )

  async def chat(self, messages, params):
    while True:
      if await self.gate.wait_clear():
        self.interruptions += 1
      call = asyncio.ensure_future(self.llm.chat(messages, params))
      if self.abort is not None:  # the server: abort at the request level
        watch = asyncio.ensure_future(self.gate.wait_active())
        await asyncio.wait({call, watch}, return_when=asyncio.FIRST_COMPLETED)
        if not call.done():
          await self.abort()
        watch.cancel()
      out = await call
      if any(c.finish_reason == 'abort' for c in out):
        self.interruptions += 1
        self.dropped_tokens += sum(len(c.token_ids or ()) for c in out)
        continue  # resend the committed prefix under the newer version
      for c in out[:1]:
        self._commit(c)
      return out

  def meta(self) -> dict:
    versions = sorted(
        {v for v, m in zip(self.record().versions, self.record().loss_mask)
         if m and v >= 0}
    )  # fmt: skip
    return {
        'interruptions': self.interruptions,
        'dropped_tokens': self.dropped_tokens,
        'spliced_versions': versions,
        'forest_nodes': len(self.forest.nodes),
    }
