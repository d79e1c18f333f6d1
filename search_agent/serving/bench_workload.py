"""A multi-turn agent workload at token level, run through any `LLM`.

Each trajectory starts from a prompt of random token ids and runs `turns`
model calls; after each call its context grows by the generated ids and an
observation of random ids (a tool result), exactly as an agent's rendered
context grows. Per-call output lengths vary (the random tiny model never
stops, so `max_tokens` sets them). The same seed gives the same workload for
every backend. `TokenPrompts` is the renderer that hands the LLM those ids.
"""

import asyncio
import dataclasses
import random
import time
from typing import Sequence


@dataclasses.dataclass(frozen=True)
class Trajectory:
  """prompt ids, then per turn (max_tokens, observation ids)."""

  prompt: tuple[int, ...]
  turns: tuple[tuple[int, tuple[int, ...]], ...]


def make(n: int, *, turns: int, prompt_len: int, out_range, obs_range,
         vocab: int, seed: int = 0) -> list[Trajectory]:  # fmt: skip
  rng = random.Random(seed)
  ids = lambda k: tuple(rng.randrange(10, vocab) for _ in range(k))
  return [
      Trajectory(
          prompt=ids(prompt_len),
          turns=tuple(
              (rng.randint(*out_range), ids(rng.randint(*obs_range)))
              for _ in range(turns)
          ),
      )
      for _ in range(n)
  ]


class TokenPrompts:
  """Renderer whose 'messages' carry a key to fixed prompt ids."""

  def __init__(self, decode, stop_token_ids: Sequence[int] = ()):
    self._decode = decode
    self.stop_token_ids = tuple(stop_token_ids)
    self.ids: dict[str, tuple[int, ...]] = {}
    self.prompt_tokens = 0  # summed over calls (what a backend may recompute)
    self.calls = 0

  def prompt_ids(self, messages):
    ids = self.ids[messages[0]['content']]
    self.prompt_tokens += len(ids)
    self.calls += 1
    return ids

  def decode(self, token_ids):
    return self._decode(list(token_ids))


@dataclasses.dataclass(frozen=True)
class RunStats:
  seconds: float
  generated: int
  per_trajectory_s: float

  @property
  def tokens_per_s(self) -> float:
    return self.generated / self.seconds


async def _one(llm, prompts: TokenPrompts, traj: Trajectory, key: str, params,
               index: int):  # fmt: skip
  t0 = time.monotonic()
  ctx, generated = traj.prompt, 0
  for i, (max_tokens, obs) in enumerate(traj.turns):
    prompts.ids[key] = ctx
    (c,) = await llm.chat(
        [{'role': 'user', 'content': key}],
        dataclasses.replace(
            params, max_tokens=max_tokens, seed=index * 100 + i
        ),
    )
    generated += len(c.token_ids)
    ctx = ctx + tuple(c.token_ids) + obs
  return generated, time.monotonic() - t0


def run(
    llm, prompts: TokenPrompts, trajs, params, concurrency: int
) -> RunStats:
  """Runs the trajectories, `concurrency` at a time; wall-clock figures."""

  async def all_of():
    sem = asyncio.Semaphore(concurrency)

    async def guarded(i, t):
      async with sem:
        return await _one(llm, prompts, t, f'traj-{i}-{id(trajs)}', params, i)

    out = await asyncio.gather(*(guarded(i, t) for i, t in enumerate(trajs)))
    if hasattr(llm, 'aclose'):
      await llm.aclose()
    return out

  t0 = time.monotonic()
  out = asyncio.run(all_of())
  seconds = time.monotonic() - t0
  return RunStats(
      seconds=seconds,
      generated=sum(g for g, _ in out),
      per_trajectory_s=sum(s for _, s in out) / len(out),
  )
