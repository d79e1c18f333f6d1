"""Rollout workers: claimed work items -> scored, token-exact groups.

A worker claims dispatched groups from the replay queue, runs `group_size`
ReAct rollouts of the group's task at once (the real harness and tools; the
policy is any `LLM`, here the in-process sampler), checks each rollout's
token exactness (`token_exact.check`; failures are dropped and counted in
the group's meta), attaches the stitched routing record, scores every
rollout (`Scorer`), and delivers the group. A group whose rollout or judge
failed is not delivered: the failure is appended to `errors.jsonl` and the
claim goes back to the queue (retried); after `max_attempts` the group is
delivered empty, so the learner drops it and its slot is refilled. Scored
rollouts are also appended to `rollouts_path` (trajectory JSONL, routing
omitted), the input of the SFT-RL climbing hand-off.
"""

import asyncio
import dataclasses
import hashlib
import json
import os
import pathlib
import statistics
import threading
import time
import traceback
from typing import Any, Awaitable, Callable, Protocol

from absl import logging
import numpy as np

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol
from search_agent.rewards import outcome
from search_agent.train.rl import partial
from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_groups
from search_agent.train.rl import rollout_times
from search_agent.train.rl import token_exact


class RolloutError(RuntimeError):
  """A rollout failed for infrastructure reasons (the group is retried)."""


class Scorer(Protocol):
  """Scores one rollout; raises (LLMError) when the judge fails."""

  async def __call__(
      self, traj: traj_lib.Trajectory, task: task_lib.Task
  ) -> outcome.RolloutReward:
    ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkerConfig:
  """One rollout worker.

  Attributes:
    worker_id: Name in lease files; a restarted worker takes its own
      leftover claims back first.
    group_size: Rollouts per question (4 in the recipe).
    max_groups: Groups in flight at once.
    max_attempts: Tries of a failing group before it is delivered empty.
    poll_s: Queue polling interval when idle.
    heartbeat_s: How often the worker refreshes its leases.
    system_prompt: Prompt file of the agent.
    latency_median_s: Benchmarks: injected environment (tool) latency per
      group, lognormal with this median (0 = none) ...
    latency_p99_s: ... and this 99th percentile (the seed's spread is
      p99/p50 = 91.7/23.6 = 3.9). A group finishes no earlier than its draw,
      which is seeded by the group's question and pass (`latency_key`), so
      two schedules that dispatch the same questions in the same order give
      the k-th group the same draw whatever their batch sizes.
    latency_strata: The task pool's question ids: the draws are then
      stratified, each pass giving each of the pool's N quantile bands
      ((r + u) / N, r a seeded per-pass permutation of the questions, u
      uniform) to one question, so a few passes already show the lognormal's
      spread (plain draws of 40 questions scatter its p99 widely).
  """

  worker_id: str = 'w0'
  group_size: int = 4
  max_groups: int = 2
  max_attempts: int = 3
  poll_s: float = 0.2
  heartbeat_s: float = 5.0
  system_prompt: str = 'agent_system.md'
  latency_median_s: float = 0.0
  latency_p99_s: float = 0.0
  latency_strata: tuple[str, ...] = ()

  def injected_latency(self, item: dict[str, Any]) -> float:
    """The seeded latency draw of one work item (0 when not injecting)."""
    if self.latency_median_s <= 0:
      return 0.0
    mu, sigma = rollout_times.fit_lognormal(
        rollout_times.GroupTimes(
            median_min=self.latency_median_s, p99_min=self.latency_p99_s
        )
    )
    rng = np.random.default_rng(_seed(latency_key(item), -1))
    task = item.get('task_id')
    if task in self.latency_strata:
      ids = sorted(self.latency_strata)
      perm = np.random.default_rng(
          _seed(f"pass{item.get('pass', 0)}", -2)
      ).permutation(len(ids))
      u = (perm[ids.index(task)] + rng.uniform()) / len(ids)
      z = statistics.NormalDist().inv_cdf(min(max(u, 1e-12), 1 - 1e-12))
    else:
      z = rng.standard_normal()
    return float(np.exp(mu + sigma * z))


def latency_key(item: dict[str, Any]) -> str:
  """What seeds a work item's injected latency: its question and pass."""
  task = item['task_id'] if 'task_id' in item else item['group_id']
  return f"{task}#pass{item.get('pass', 0)}"


def _seed(group_id: str, i: int) -> int:
  h = hashlib.sha256(f'{group_id}#{i}'.encode()).digest()
  return int.from_bytes(h[:4], 'little') % (2**31 - 1000)


class RolloutWorker:
  """Runs claimed groups against one policy LLM and toolbox factory."""

  def __init__(
      self,
      cfg: WorkerConfig,
      *,
      policy: protocol.LLM,
      agent_cfg: react.AgentConfig,
      toolbox_factory: Callable[[task_lib.Task], react.Toolbox],
      system_text: str,
      scorer: Scorer,
      queue: replay_queue.ReplayQueue,
      errors_path: str | os.PathLike[str],
      rollouts_path: str | os.PathLike[str] | None = None,
      gate: Any = None,
      abort: Callable[[], Awaitable[None]] | None = None,
  ):
    self.cfg = cfg
    self.policy = policy
    self.agent_cfg = agent_cfg
    self.toolbox_factory = toolbox_factory
    self.system_text = system_text
    self.scorer = scorer
    self.queue = queue
    self.errors_path = pathlib.Path(errors_path)
    self.rollouts_path = rollouts_path
    # Groups run concurrently and append from threads: one writer at a time,
    # or two large lines interleave in the file.
    self._rollouts_lock = asyncio.Lock()
    self.gate, self.abort = gate, abort  # partial rollouts (partial.py)
    self.delivered = 0
    self._attempts: dict[str, int] = {}
    self._counted: dict[str, int] = {}  # session counters already reported

  async def _rollout(self, task, group_id, i):
    policy = self.policy
    if self.gate is not None:
      policy = partial.PartialPolicy(self.policy, self.gate, self.abort)
    llm = token_exact.RecordingLLM(policy)
    agent_cfg = dataclasses.replace(self.agent_cfg, seed=_seed(group_id, i))
    agent = react.ReActAgent(llm, agent_cfg)
    try:
      traj = await agent.run(
          traj_id=f'{group_id}#{i}',
          task_id=task.id,
          question=task.question,
          system_prompt=self.system_text,
          toolbox=self.toolbox_factory(task),
      )
    finally:  # the server stops keeping (and recomputing) its sessions
      if release := getattr(self.policy, 'release', None):
        await release(llm.calls)
    if self.gate is not None:
      traj = dataclasses.replace(
          traj, meta={**traj.meta, 'partial': policy.meta()}
      )
    if traj.status == 'failed':
      raise RolloutError(f'rollout {traj.id} failed: {traj.error}')
    out = token_exact.routed(traj, llm.calls)
    if isinstance(out, str):
      return traj, None, out
    return out, llm.calls, ''

  async def run_group(
      self, item: dict[str, Any]
  ) -> rollout_groups.RolloutGroup:
    """Rolls out and scores one dispatched group (raises on failure)."""
    start = time.monotonic()
    task = task_lib.Task.from_json(item['task'])
    gid = item['group_id']
    outs = await asyncio.gather(
        *(self._rollout(task, gid, i) for i in range(self.cfg.group_size))
    )
    draw = self.cfg.injected_latency(item)
    wait = draw - (time.monotonic() - start)
    if wait > 0:
      await asyncio.sleep(wait)
    scored, inexact, statuses, versions = [], [], [], set()
    for traj, _, why in outs:
      statuses.append(traj.status)
      if why:
        inexact.append(why)
        continue
      reward = await self.scorer(traj, task)
      scored.append(rollout_groups.scored(traj, reward))
      if self.rollouts_path is not None:  # for SFT-RL climbing, inspection
        kept = dataclasses.replace(
            token_exact.unrouted(traj),
            meta={**traj.meta, 'group_id': gid,
                  'reward': dataclasses.asdict(reward)},
        )  # fmt: skip
        async with self._rollouts_lock:
          await asyncio.to_thread(
              traj_lib.append_jsonl, self.rollouts_path, kept
          )
      versions.update(v for s in traj.segments for v in s.versions if v >= 0)
    return rollout_groups.RolloutGroup(
        group_id=gid,
        task_id=task.id,
        dispatch_batch=int(item['batch']),
        trajectories=tuple(scored),
        meta={
            'seconds': time.monotonic() - start,
            'injected_latency_s': draw,
            'worker': self.cfg.worker_id,
            'dropped_inexact': len(inexact),
            'inexact_reasons': inexact,
            'statuses': statuses,
            'versions': sorted(versions),
            'pass': item.get('pass', 0),
            'interruptions': sum(
                t.meta.get('partial', {}).get('interruptions', 0)
                for t, _, _ in outs
            ),
            'spliced_rollouts': sum(
                len(t.meta.get('partial', {}).get('spliced_versions', ())) > 1
                for t, _, _ in outs
            ),
            **self._new_session_counts(),
        },
    )

  def _new_session_counts(self) -> dict[str, int]:
    """The policy's and judges' counters since the last group that took them.

    Rollout servers: tokens weight pushes recomputed and sessions released
    (server_policy.SyncedServerLLM); the 'openai' policy's and the LLM
    judges' calls and retries (scoring.LLMScorer); each count lands in one
    group only.
    """
    now = {}
    for source in (self.policy, self.scorer):
      for name in ('session_counters', 'counters'):
        if (counters := getattr(source, name, None)) is not None:
          now.update(counters())
    out = {k: v - self._counted.get(k, 0) for k, v in now.items()}
    self._counted = now
    return out

  def _record_error(self, item, error: BaseException) -> None:
    line = {
        'group_id': item['group_id'],
        'worker': self.cfg.worker_id,
        'attempt': self._attempts.get(item['group_id'], 0),
        'error': f'{type(error).__name__}: {error}',
        'traceback': ''.join(traceback.format_exception(error))[-2000:],
        'time': time.time(),
    }
    with open(self.errors_path, 'a', encoding='utf-8') as f:
      f.write(json.dumps(line) + '\n')

  async def _one(self, item: dict[str, Any]) -> None:
    gid = item['group_id']
    try:
      group = await self.run_group(item)
    except Exception as e:  # pylint: disable=broad-exception-caught
      # Rollout or judge failure: recorded, the group retried, never scored.
      self._attempts[gid] = self._attempts.get(gid, 0) + 1
      self._record_error(item, e)
      logging.warning('group %s failed (attempt %d): %s', gid,
                      self._attempts[gid], e)  # fmt: skip
      if self._attempts[gid] < self.cfg.max_attempts:
        self.queue.release(gid, self.cfg.worker_id)
        return
      group = rollout_groups.RolloutGroup(
          group_id=gid,
          task_id=item['task_id'],
          dispatch_batch=int(item['batch']),
          trajectories=(),
          meta={'failed': True, 'worker': self.cfg.worker_id},
      )
    self.queue.deliver(group, self.cfg.worker_id)
    self.delivered += 1

  async def serve(
      self,
      stop: threading.Event,
      on_idle: Callable[[], Awaitable[None]] | None = None,
  ) -> None:
    """Claims and runs groups until `stop` is set."""
    back = self.queue.release_worker(self.cfg.worker_id)
    if back:
      logging.info('worker %s took back %d claims', self.cfg.worker_id,
                   len(back))  # fmt: skip
    running: set[asyncio.Task] = set()
    beat = time.monotonic()
    while not stop.is_set():
      while len(running) < self.cfg.max_groups:
        item = self.queue.claim(self.cfg.worker_id)
        if item is None:
          break
        running.add(asyncio.create_task(self._one(item)))
      if time.monotonic() - beat > self.cfg.heartbeat_s:
        self.queue.touch_leases(self.cfg.worker_id)
        beat = time.monotonic()
      if running:
        done, running = await asyncio.wait(
            running, timeout=self.cfg.poll_s,
            return_when=asyncio.FIRST_COMPLETED,
        )  # fmt: skip
        for t in done:
          t.result()  # a bug in the worker itself must surface
      else:
        if on_idle is not None:
          await on_idle()
        await asyncio.sleep(self.cfg.poll_s)
    for t in running:
      t.cancel()
