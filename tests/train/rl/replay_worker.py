"""A rollout-worker process for the replay-queue crash test.

Usage: python replay_worker.py ROOT WORKER CRASH_AFTER
Claims work, "generates" a scored group and delivers it. After CRASH_AFTER
deliveries it claims one more item, writes half of its group file into tmp/
and hangs there, so the test can SIGKILL it mid-write.
"""

import json
import pathlib
import sys
import time

from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import replay_queue
from search_agent.train.rl import rollout_groups


def make_group(item: dict) -> rollout_groups.RolloutGroup:
  n = 6
  return rollout_groups.RolloutGroup(
      group_id=item['group_id'],
      task_id=item['task_id'],
      dispatch_batch=item['batch'],
      trajectories=tuple(
          rollout_groups.ScoredTrajectory(
              trajectory_id=f'{item["group_id"]}/{i}',
              segments=(
                  traj_lib.TokenRecord(
                      token_ids=tuple(range(n)),
                      loss_mask=(0, 0, 1, 1, 1, 1),
                      logprobs=(0.0,) * n,
                      versions=(-1, -1, 0, 0, 0, 0),
                  ),
              ),
              reward=0.25 * i,
          )
          for i in range(4)
      ),
  )


def main(root: str, worker: str, crash_after: int) -> None:
  q = replay_queue.ReplayQueue(root)
  delivered = 0
  while (item := q.claim(worker)) is not None:
    group = make_group(item)
    if delivered == crash_after:
      text = json.dumps(group.to_json())
      tmp = pathlib.Path(root) / 'tmp' / f'{group.group_id}.partial'
      with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text[: len(text) // 2])
        f.flush()
      time.sleep(3600)  # killed here
    time.sleep(0.01)
    q.deliver(group, worker)
    delivered += 1


if __name__ == '__main__':
  main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
