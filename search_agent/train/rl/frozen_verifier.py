"""SearchMaster's Verifier in process: a frozen copy of the initial model.

The seed: "The Verifier V is a frozen copy of the initial model and remains
fixed." `FrozenInitialLLM` is an `LLM` over its own sampler (beside the
rollout worker's, on the same devices) that holds the run's version-0
weights, which the learner publishes from its initial parameters (an SFT
checkpoint, converted HF params or random init) before any update. On first
use it copies `weights/0` once to `<workdir>/selfplay/verifier/0` (atomic:
complete or absent) and loads from that copy, so the Verifier stays the
initial model after the learner prunes old versions and when a run resumes;
it never polls the weight store again, so no push reaches it.
`selfplay.verifier.kind='frozen'` wraps it in `LLMVerifier`
(train/rl/selfplay.py).
"""

import asyncio
import os
import pathlib
import shutil
import time
from typing import Any, Callable, Sequence
import uuid

from absl import logging

from search_agent.llm import protocol
from search_agent.llm import sampler_client
from search_agent.train.rl import weight_sync

INITIAL_VERSION = 0


class FrozenVerifierError(RuntimeError):
  """The initial weights never appeared (is the learner running?)."""


def frozen_copy(
    store: weight_sync.WeightStore,
    root: str | os.PathLike[str],
    timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> weight_sync.WeightStore:
  """A store at `root` holding version 0, copied from `store` once.

  Waits up to `timeout_s` for the learner's version-0 publish when there is
  no copy yet.
  """
  frozen = weight_sync.WeightStore(root, keep=1)
  final = frozen.root / str(INITIAL_VERSION)
  waited = 0.0
  while not final.exists():
    src = store.root / str(INITIAL_VERSION)
    if src.is_dir():
      tmp = frozen.root / f'.tmp-{uuid.uuid4().hex}'
      try:
        shutil.copytree(src, tmp)
      except FileNotFoundError:  # replaced underneath (a resumed learner)
        shutil.rmtree(tmp, ignore_errors=True)
        continue
      try:
        os.rename(tmp, final)
      except OSError:  # another worker made the copy first
        shutil.rmtree(tmp, ignore_errors=True)
      break
    if waited > timeout_s:
      raise FrozenVerifierError(
          f'no version {INITIAL_VERSION} under {store.root} after'
          f" {timeout_s:.0f}s: the frozen Verifier copies the learner's"
          ' initial weights; is the learner running?'
      )
    sleep(0.5)
    waited += 0.5
  return frozen


class FrozenInitialLLM:
  """An `LLM` over a sampler holding the initial weights, loaded once."""

  def __init__(
      self,
      make_sampler: Callable[[], Any],
      prompts: sampler_client.PromptRenderer,
      store: weight_sync.WeightStore,
      root: str | os.PathLike[str],
      *,
      name: str = 'frozen-initial-model',
      timeout_s: float = 3600.0,
  ):
    self.name = name
    self._make_sampler, self._prompts = make_sampler, prompts
    self._store, self._root = store, pathlib.Path(root)
    self._timeout_s = timeout_s
    self._llm: sampler_client.SamplerLLM | None = None
    self._lock = asyncio.Lock()

  @property
  def policy_version(self) -> int:
    return -1 if self._llm is None else self._llm.sampler.policy_version

  def _load(self) -> sampler_client.SamplerLLM:
    frozen = frozen_copy(self._store, self._root, self._timeout_s)
    sampler = self._make_sampler()
    params = frozen.load(INITIAL_VERSION, sampler.abstract_params())
    sampler.set_params(params, policy_version=INITIAL_VERSION)
    logging.info('frozen Verifier: the initial weights from %s', frozen.root)
    return sampler_client.SamplerLLM(sampler, self._prompts, name=self.name)

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    async with self._lock:
      if self._llm is None:
        self._llm = await asyncio.to_thread(self._load)
    return await self._llm.chat(messages, params)
