"""Feeds a learner the groups another run's learner used, update by update.

A stand-in rollout worker for comparing learners: it claims the work items
the learner under test dispatches and delivers the recorded run's group of
the same id once the learner has reached the version that used it (groups
of update u after weight version u is published), so every update sees the
same groups as the recorded one. Groups the recorded run never used are
never delivered. `vary_rewards` rewrites the i-th rollout's reward of every
group to (i + 1) / size, so a random-init policy's all-zero groups carry a
gradient to compare.
"""

import dataclasses
import json
import pathlib
import threading

from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_groups


def recorded_updates(workdir) -> dict[str, int]:
  """Group id -> the update (0-based) that used or dropped it in `workdir`."""
  q = replay_queue.ReplayQueue(pathlib.Path(workdir) / 'queue')
  out = {}
  for e in q._entries():  # pylint: disable=protected-access
    for g in (*e['groups'], *e.get('dropped', ())):
      out[g] = e['update']
  return out


class Feeder(threading.Thread):
  """Delivers `recorded`'s groups into `workdir`'s queue (see the module)."""

  def __init__(self, recorded, workdir, vary_rewards=False, poll_s=0.2):
    super().__init__(daemon=True)
    self.vary_rewards = vary_rewards
    self.recorded = pathlib.Path(recorded)
    self.workdir = pathlib.Path(workdir)
    self.poll_s = poll_s
    self.stop = threading.Event()
    self.delivered: list[str] = []

  def run(self) -> None:
    plan = recorded_updates(self.recorded)
    pending = {}
    q = None
    while not self.stop.is_set():
      if q is None:
        if not (self.workdir / 'queue').exists():
          self.stop.wait(self.poll_s)
          continue
        q = replay_queue.ReplayQueue(self.workdir / 'queue')
      while (item := q.claim('replay')) is not None:
        pending[item['group_id']] = item
      for gid in list(pending):
        update = plan.get(gid)
        if update is None:
          continue
        if (self.workdir / 'weights' / str(update)).exists():
          path = self.recorded / 'queue' / 'groups' / f'{gid}.json'
          group = rollout_groups.RolloutGroup.from_json(
              json.loads(path.read_text('utf-8'))
          )
          if self.vary_rewards:
            group = _varied(group)
          q.deliver(group, 'replay')
          self.delivered.append(gid)
          del pending[gid]
      self.stop.wait(self.poll_s)


def _varied(group: rollout_groups.RolloutGroup) -> rollout_groups.RolloutGroup:
  n = len(group.trajectories)
  trajs = tuple(
      dataclasses.replace(t, reward=(i + 1) / n)
      for i, t in enumerate(group.trajectories)
  )
  return dataclasses.replace(group, trajectories=trajs)
