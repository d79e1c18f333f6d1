"""Runs many trajectories at once, with a bound, into append-only JSONL.

`run_all` starts one coroutine per task, at most `max_concurrency` at a time,
against shared LLM and search endpoints. Each finished trajectory is appended
to the output file as soon as it ends (one line, fsynced). A coroutine that
raises becomes a trajectory with status 'failed' and the error text: a crash
is recorded, never lost. Tasks whose trajectory id is already in the file are
skipped, so an interrupted run resumes where it stopped.
`rewrite_in_task_order` puts a finished file in task order, so whatever
reads it first-come (filters keeping the first rollouts of a task) does not
depend on which run ended first.
"""

import asyncio
import json
import os
import time
import traceback
from typing import Awaitable, Callable, Iterable

from search_agent import paths
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory

RunOne = Callable[[task_lib.Task, str], Awaitable[trajectory.Trajectory]]
Write = Callable[[str | os.PathLike[str], trajectory.Trajectory], None]


def trajectory_id(task: task_lib.Task, sample: int = 0) -> str:
  return f'{task.id}#{sample}'


def finished_ids(path: str | os.PathLike[str]) -> set[str]:
  """Ids of trajectories already in `path` (unreadable lines are skipped)."""
  if not os.path.exists(path):
    return set()
  errors: list[trajectory.LineError] = []
  return {t.id for t in trajectory.iter_jsonl(path, errors)}


def failed(
    task: task_lib.Task, traj_id: str, error: BaseException, seconds: float
) -> trajectory.Trajectory:
  """The record of a crashed run: status 'failed' with the traceback tail."""
  tb = ''.join(traceback.format_exception(error))[-2000:]
  return trajectory.Trajectory(
      id=traj_id,
      task_id=task.id,
      question=task.question,
      messages=(),
      status='failed',
      error=f'{type(error).__name__}: {error}\n{tb}',
      timings={'total': seconds},
  )


async def run_all(
    tasks: Iterable[task_lib.Task],
    run_one: RunOne,
    out_path: str | os.PathLike[str],
    *,
    max_concurrency: int,
    samples: int = 1,
    write: Write = trajectory.append_jsonl,
    done: set[str] | None = None,
) -> list[trajectory.Trajectory]:
  """Runs every (task, sample) not yet in `out_path`; returns the new ones.

  Args:
    tasks: Tasks to run.
    run_one: Coroutine function (task, trajectory id) -> Trajectory.
    out_path: JSONL file the trajectories are appended to.
    max_concurrency: Most runs in flight at once.
    samples: Runs per task (ids '<task id>#<sample>').
    write: Appends one trajectory to `out_path` (default: plain JSONL).
    done: Ids to skip; default: the ids already in `out_path`.

  Returns:
    The trajectories written by this call, in completion order.
  """
  if max_concurrency < 1:
    raise ValueError(f'max_concurrency must be >= 1, got {max_concurrency}')
  done = finished_ids(out_path) if done is None else done
  semaphore = asyncio.Semaphore(max_concurrency)
  lock = asyncio.Lock()
  written: list[trajectory.Trajectory] = []

  async def one(task: task_lib.Task, traj_id: str) -> None:
    async with semaphore:
      start = time.monotonic()
      try:
        traj = await run_one(task, traj_id)
      except Exception as e:  # pylint: disable=broad-exception-caught
        # Recorded as a failed trajectory (status, error, traceback).
        traj = failed(task, traj_id, e, time.monotonic() - start)
      async with lock:
        await asyncio.to_thread(write, out_path, traj)
        written.append(traj)

  jobs = [
      one(task, trajectory_id(task, s))
      for task in tasks
      for s in range(samples)
      if trajectory_id(task, s) not in done
  ]
  await asyncio.gather(*jobs)
  return written


def rewrite_in_task_order(
    path: str | os.PathLike[str],
    tasks: Iterable[task_lib.Task],
    *,
    samples: int = 1,
) -> None:
  """Rewrites `run_all`'s output at `path` in (task, sample) order.

  Lines are kept byte for byte; lines of other ids, and unreadable ones,
  follow in the order they had. The file is replaced atomically.
  """
  order = [trajectory_id(t, s) for t in tasks for s in range(samples)]
  rank = {traj_id: i for i, traj_id in enumerate(order)}
  with open(path, encoding='utf-8') as f:
    lines = [l if l.endswith('\n') else l + '\n' for l in f if l.strip()]

  def key(item: tuple[int, str]) -> tuple[int, int]:
    i, line = item
    try:
      return rank[json.loads(line)['id']], i
    except (ValueError, KeyError, TypeError):
      return len(rank), i

  paths.write_atomic(
      path, ''.join(l for _, l in sorted(enumerate(lines), key=key))
  )
