r"""Ready-first vs synchronous in the real RL loop, at equal resources.

  python -m search_agent.train.rl.loop_benchmark --workdir=DIR \
      [--updates=5] [--slots=4] [--median_s=4] [--p99_s=15.6]

Runs `search_agent.train.rl.run` (--role=all, tiny config) twice on the same
model, tasks, worker slots and number of groups: once ready-first, once
synchronous (each step dispatches one group per slot and waits for all of
them). Every group's completion is held to a seeded lognormal draw (the
seed's spread: p99/p50 = 91.7/23.6 = 3.9) standing in for tool latency; the
same group id gets the same draw in both runs. Writes DIR/benchmark.json
with trajectories/hour and the learner's idle share, measured from the end
of the first update (compilation excluded) to the end of the last, and the
simulator re-run with costs fitted to what the ready-first run measured
(group-time median/p99, learner seconds per group, the same slots).
"""

import json
import os
import subprocess

from absl import app
from absl import flags

from search_agent.train.rl.schedule_comparison import fitted_simulation
from search_agent.train.rl.schedule_comparison import run_args
from search_agent.train.rl.schedule_comparison import summarize

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_UPDATES = flags.DEFINE_integer('updates', 5, 'Updates per run.')
_SLOTS = flags.DEFINE_integer('slots', 4, 'Groups a worker runs at once.')
_MEDIAN = flags.DEFINE_float('median_s', 4.0, 'Median group latency (s).')
_P99 = flags.DEFINE_float('p99_s', 15.6, 'p99 group latency (s).')
_REUSE = flags.DEFINE_bool(
    'reuse', False, 'Keep runs whose metrics.jsonl is complete.'
)


def main(argv):
  del argv
  out = {}
  for mode in ('ready_first', 'synchronous'):
    wd = os.path.join(_WORKDIR.value, mode)
    path = os.path.join(wd, 'metrics.jsonl')
    done = os.path.exists(path) and len(open(path).readlines()) >= (
        _UPDATES.value
    )  # fmt: skip
    if not (_REUSE.value and done):
      cmd = run_args(mode, wd, _UPDATES.value, _SLOTS.value, _MEDIAN.value,
                     _P99.value)  # fmt: skip
      subprocess.run(cmd, check=True, capture_output=True)
    with open(path, encoding='utf-8') as f:
      out[mode] = summarize([json.loads(l) for l in f if l.strip()])
    print(mode, json.dumps(out[mode]))
  ratio = (
      out['ready_first']['trajectories_per_hour']
      / out['synchronous']['trajectories_per_hour']
  )
  out['speedup'] = ratio
  out['settings'] = {
      'updates': _UPDATES.value, 'slots': _SLOTS.value,
      'median_s': _MEDIAN.value, 'p99_s': _P99.value,
  }  # fmt: skip
  out['simulator_fitted'] = fitted_simulation(_WORKDIR.value, _SLOTS.value, 50)
  with open(os.path.join(_WORKDIR.value, 'benchmark.json'), 'w') as f:
    json.dump(out, f, indent=1)
  print(f'ready-first / synchronous = {ratio:.2f}x trajectories/hour')
  print('simulator, costs fitted to the run:',
        json.dumps(out['simulator_fitted']))  # fmt: skip


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
