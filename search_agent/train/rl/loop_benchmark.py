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
of the first update (compilation excluded) to the end of the last.
"""

import json
import os
import subprocess
import sys

from absl import app
from absl import flags

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_UPDATES = flags.DEFINE_integer('updates', 5, 'Updates per run.')
_SLOTS = flags.DEFINE_integer('slots', 4, 'Groups a worker runs at once.')
_MEDIAN = flags.DEFINE_float('median_s', 4.0, 'Median group latency (s).')
_P99 = flags.DEFINE_float('p99_s', 15.6, 'p99 group latency (s).')


def run_args(mode: str, workdir: str, updates: int, slots: int, median, p99):
  """The binary's command line of one schedule."""
  sync = mode == 'synchronous'
  return [
      sys.executable, '-m', 'search_agent.train.rl.run',
      '--config=tpu_configs/rl.py:tiny', f'--workdir={workdir}',
      f'--config.max_updates={updates}', '--config.group_size=2',
      f'--config.scheduler.groups_per_update={slots}',
      f'--config.scheduler.start_after_ready={1 if sync else 2}',
      f'--config.scheduler.dispatch_batch_groups={slots}',
      '--config.scheduler.admission_window=2',
      f'--config.scheduler.synchronous={sync}',
      f'--config.rollout.max_groups={slots}',
      '--config.rollout.max_agent_steps=1',
      '--config.rollout.max_tokens_per_call=8',
      '--config.rollout.min_output_tokens=4',
      '--config.sampler.max_new_tokens=8',
      f'--config.rollout.latency_median_s={median}',
      f'--config.rollout.latency_p99_s={p99}',
  ]  # fmt: skip


def summarize(metrics: list[dict]) -> dict:
  """Throughput and learner idle share after the first update."""
  steady = metrics[1:]
  wall = metrics[-1]['time'] - metrics[0]['time']
  trajs = sum(m['trajectories'] for m in steady)
  busy = sum(m['learner_busy_seconds'] for m in steady)
  return {
      'updates_measured': len(steady),
      'seconds': wall,
      'trajectories': trajs,
      'trajectories_per_hour': 3600.0 * trajs / wall,
      'learner_idle_share': 1.0 - busy / wall,
      'tokens_past_age_limit': sum(m['tokens_past_age_limit'] for m in metrics),
      'max_token_age': max(
          max((a for a, n in enumerate(m['token_age_hist']) if n), default=0)
          for m in metrics
      ),
      'group_seconds_p50': [m['group_seconds_p50'] for m in metrics],
  }


def main(argv):
  del argv
  out = {}
  for mode in ('ready_first', 'synchronous'):
    wd = os.path.join(_WORKDIR.value, mode)
    cmd = run_args(mode, wd, _UPDATES.value, _SLOTS.value, _MEDIAN.value,
                   _P99.value)  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    with open(os.path.join(wd, 'metrics.jsonl'), encoding='utf-8') as f:
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
  with open(os.path.join(_WORKDIR.value, 'benchmark.json'), 'w') as f:
    json.dump(out, f, indent=1)
  print(f'ready-first / synchronous = {ratio:.2f}x trajectories/hour')


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
