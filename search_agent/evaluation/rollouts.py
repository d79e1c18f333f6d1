"""Runs an eval's rollouts and grades each one as soon as it ends.

At most `concurrency` rollouts run at once; each finished one is appended
to `trajectories.jsonl` (a crash becomes a 'failed' trajectory) and handed
to the grader straight away, so results stream while the others run. A
progress line (rollouts done / running / failed, pass@1 so far, ETA) is
logged every `progress_every_s` seconds and at the end. Once more than
`max_failed_share` of all rollouts have failed, no new rollout starts (the
eval has failed whatever the rest do); those in flight finish and are kept.
"""

import asyncio
import dataclasses
import os
import pathlib
import time
from typing import Any, Awaitable, Callable, Mapping, Sequence

from absl import logging

from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.evaluation import failures
from search_agent.evaluation import grading
from search_agent.evaluation import results

RunOne = Callable[[task_lib.Task, str], Awaitable[trajectory.Trajectory]]
GradeOne = Callable[[trajectory.Trajectory], Awaitable[dict[str, Any]]]


@dataclasses.dataclass
class Progress:
  """Counts of one eval's rollouts so far (this invocation)."""

  total: int
  todo: int
  done: int = 0
  running: int = 0
  failed: int = 0
  graded: int = 0
  correct: int = 0
  start: float = dataclasses.field(default_factory=time.monotonic)

  def line(self) -> str:
    """'eval: 3/8 rollouts done, 2 running, 1 failed; pass@1 so far ...'."""
    elapsed = time.monotonic() - self.start
    left = self.todo - self.done
    eta = '—'
    if self.done and left:
      eta = _duration(elapsed / self.done * left)
    elif not left:
      eta = 'done'
    so_far = '—'
    if self.graded:
      so_far = f'{100 * self.correct / self.graded:.1f}%'
    return (
        f'eval: {self.done}/{self.todo} rollouts done'
        f' ({self.total - self.todo} earlier), {self.running} running,'
        f' {self.failed} failed; pass@1 so far {so_far}'
        f' ({self.correct}/{self.graded} graded); elapsed'
        f' {_duration(elapsed)}, ETA {eta}'
    )


def _duration(seconds: float) -> str:
  s = int(seconds)
  if s < 60:
    return f'{s}s'
  if s < 3600:
    return f'{s // 60}m{s % 60:02d}s'
  return f'{s // 3600}h{s % 3600 // 60:02d}m'


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOutcome:
  """What one invocation ran.

  Attributes:
    graded: Trajectory ids graded while running (not to grade again).
    stopped: True when new rollouts were held back (too many failed).
    not_started: Rollouts never started because of that.
  """

  graded: frozenset[str]
  stopped: bool
  not_started: int


async def run_and_grade(
    jobs: Sequence[tuple[task_lib.Task, str]],
    run_one: RunOne,
    grade_one: GradeOne,
    out_path: str | os.PathLike[str],
    *,
    total: int,
    concurrency: int,
    write: Callable[[Any, trajectory.Trajectory], None],
    max_failed_share: float,
    progress_every_s: float = 10.0,
) -> RunOutcome:
  """Runs `jobs` (task, trajectory id), grading each as it finishes.

  Args:
    jobs: The rollouts still to run.
    run_one: Coroutine function (task, trajectory id) -> Trajectory.
    grade_one: Grades and records a written trajectory; returns the record.
    out_path: The trajectories file.
    total: Rollouts of the whole eval (done earlier included).
    concurrency: Most rollouts in flight.
    write: Appends one trajectory to `out_path`.
    max_failed_share: Share of `total` whose failure stops new rollouts.
    progress_every_s: Seconds between progress lines.
  """
  progress = Progress(total=total, todo=len(jobs))
  semaphore = asyncio.Semaphore(concurrency)
  lock = asyncio.Lock()
  graded: set[str] = set()
  grading: list[asyncio.Task] = []
  stop = asyncio.Event()
  last_log = [time.monotonic()]
  started = [0]

  def maybe_log(force: bool = False) -> None:
    now = time.monotonic()
    if force or now - last_log[0] >= progress_every_s:
      last_log[0] = now
      logging.info('%s', progress.line())

  async def grade(traj: trajectory.Trajectory) -> None:
    rec = await grade_one(traj)
    graded.add(traj.id)
    progress.graded += 1
    progress.correct += bool(rec.get('correct'))
    maybe_log()

  async def one(task: task_lib.Task, traj_id: str) -> None:
    async with semaphore:
      if stop.is_set():
        return
      started[0] += 1
      progress.running += 1
      begin = time.monotonic()
      try:
        traj = await run_one(task, traj_id)
      except Exception as e:  # pylint: disable=broad-exception-caught
        traj = runner.failed(task, traj_id, e, time.monotonic() - begin)
      async with lock:
        await asyncio.to_thread(write, out_path, traj)
      progress.running -= 1
      progress.done += 1
      if traj.status == 'failed':
        progress.failed += 1
        logging.warning(
            'rollout %s failed: %s', traj_id, failures.error_kind(traj.error)
        )
        if failures.too_many(progress.failed, total, max_failed_share):
          stop.set()
      grading.append(asyncio.create_task(grade(traj)))
      maybe_log()

  await asyncio.gather(*(one(t, i) for t, i in jobs))
  await asyncio.gather(*grading)
  maybe_log(force=bool(jobs))
  return RunOutcome(
      graded=frozenset(graded),
      stopped=stop.is_set(),
      not_started=len(jobs) - started[0],
  )


class Grader:
  """Grades one trajectory and appends its record (bounded concurrency)."""

  def __init__(self, config, tasks, judge, out):
    self.config, self.tasks, self.judge, self.out = config, tasks, judge, out
    self.semaphore = asyncio.Semaphore(config.concurrency)
    self.attempts = 0

  async def grade(self, traj) -> dict[str, Any]:
    task = self.tasks[traj.task_id]
    async with self.semaphore:
      grade = await grading.grade(
          task,
          results.final_reply(traj),
          traj.final_answer,
          self.judge,
          self.config.grader,
          no_answer_method=(
              'run_failed' if traj.status == 'failed' else 'no_answer'
          ),
      )
    self.attempts += grade.attempts
    rec = results.record(task, traj, grade, self.config.dataset.name)
    results.append_record(self.out / results.RESULTS, rec)
    return rec


async def grade_all(
    config: Any,
    tasks: Mapping[str, task_lib.Task],
    grader: Grader,
    out: pathlib.Path,
    skip: frozenset[str] = frozenset(),
) -> None:
  """Grades trajectories that lack a result or whose judge failed."""
  latest = results.read_records(out / results.RESULTS)

  def stale(t) -> bool:
    rec = latest.get(t.id)
    return t.id not in skip and (
        config.regrade
        or rec is None
        or rec['correct'] is None
        or rec['status'] != t.status  # the run was redone
    )

  trajs = results.latest_trajectories(out / results.TRAJECTORIES, tasks)
  todo = [t for t in trajs if t.task_id in tasks and stale(t)]
  await asyncio.gather(*(grader.grade(t) for t in todo))
