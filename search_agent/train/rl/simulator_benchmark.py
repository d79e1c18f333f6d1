r"""Benchmarks synchronous vs ready-first (+ partial rollouts) schedules.

  python -m search_agent.train.rl.simulator_benchmark \
      --config=tpu_configs/rl.py --workdir=/tmp/rl_sim

Writes <workdir>/simulation.json and prints one line per schedule. The
headline ratio compares ready-first with the synchronous baseline at equal
resources (one group per slot per step); `sync_32_groups` (32 groups on the
same slots) is printed as a labelled variant.
"""

import json
import os

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.train.rl import config as config_lib
from search_agent.train.rl import simulator

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'RL config file (tpu_configs/rl.py).', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def summary_line(mode: str, r: dict) -> str:
  return (
      f'{mode:22s} traj/h {r["trajectories_per_hour"]:7.1f}  learner util'
      f' {r["learner_utilization"]:.3f}  gen util'
      f' {r["generation_utilization"]:.3f}  min/update'
      f' {r["minutes_per_update"]:6.1f}  token age mean'
      f' {r["mean_token_age"]:.2f} max {r["max_token_age"]} over-limit'
      f' {r["over_age_limit_fraction"]:.4f}'
  )


def main(argv):
  del argv
  c = _CONFIG.value
  reports = simulator.compare(config_lib.sim_config(c), c.sim.oversample)
  os.makedirs(_WORKDIR.value, exist_ok=True)
  path = os.path.join(_WORKDIR.value, 'simulation.json')
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(reports, f, indent=1)
  for mode, r in reports.items():
    print(summary_line(mode, r))
  ready = reports['ready_first']['trajectories_per_hour']
  for mode, label in (
      ('synchronous', 'synchronous (equal slots)'),
      ('sync_32_groups', 'sync_32_groups (variant)'),
  ):
    r = reports[mode]
    print(
        f'ready-first / {label} = {ready / r["trajectories_per_hour"]:.2f}x'
        f' ({r["groups_per_update"]} groups/step, peak'
        f' {r["peak_busy_slots"]}/{r["slots"]} slots)'
    )
  print(f'report: {path}')
  print('group minutes:', json.dumps(reports['ready_first']['group_minutes']))


if __name__ == '__main__':
  flags.mark_flags_as_required(['config', 'workdir'])
  app.run(main)
