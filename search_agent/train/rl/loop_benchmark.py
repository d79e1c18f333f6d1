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
import pathlib
import subprocess
import sys

from absl import app
from absl import flags
import numpy as np

from search_agent.train.rl import rollout_times
from search_agent.train.rl import scheduler as sched_lib
from search_agent.train.rl import simulator

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_UPDATES = flags.DEFINE_integer('updates', 5, 'Updates per run.')
_SLOTS = flags.DEFINE_integer('slots', 4, 'Groups a worker runs at once.')
_MEDIAN = flags.DEFINE_float('median_s', 4.0, 'Median group latency (s).')
_P99 = flags.DEFINE_float('p99_s', 15.6, 'p99 group latency (s).')
_REUSE = flags.DEFINE_bool(
    'reuse', False, 'Keep runs whose metrics.jsonl is complete.'
)


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


def group_seconds(workdir: str) -> list[float]:
  """Completion times of every delivered group of a run."""
  root = pathlib.Path(workdir) / 'queue' / 'groups'
  return [
      json.loads(p.read_text())['meta'].get('seconds', 0.0)
      for p in sorted(root.glob('*.json'))
  ]


def fitted_simulation(workdir: str, slots: int, updates: int) -> dict:
  """The simulator with costs fitted to the ready-first run's measurements."""
  wd = os.path.join(workdir, 'ready_first')
  with open(os.path.join(wd, 'metrics.jsonl'), encoding='utf-8') as f:
    ms = [json.loads(l) for l in f if l.strip()][1:]
  secs = np.asarray(group_seconds(wd))
  groups = sum(m['groups_used'] for m in ms)
  busy = sum(m['learner_busy_seconds'] for m in ms)
  med = float(np.median(secs))
  base = simulator.SimConfig(
      cluster=simulator.ClusterConfig(
          generation_nodes=1, group_slots_per_node=slots, training_nodes=1,
          learner_node_minutes_per_group=busy / groups / 60.0,
          apply_minutes=0.01, turn_minutes=med / 60.0,
      ),
      times=rollout_times.GroupTimes(
          median_min=med / 60.0,
          p99_min=max(float(np.quantile(secs, 0.99)), med * 1.01) / 60.0,
      ),
      scheduler=sched_lib.SchedulerConfig(
          groups_per_update=slots, start_after_ready=2,
          dispatch_batch_groups=slots, admission_window=2,
      ),
      updates=updates,
  )  # fmt: skip
  reports = simulator.compare(base, 0.0, ('ready_first', 'synchronous'))
  tph = {k: r['trajectories_per_hour'] for k, r in reports.items()}
  return {
      'fitted': {
          'group_seconds_median': med,
          'group_seconds_p99': float(np.quantile(secs, 0.99)),
          'learner_seconds_per_group': busy / groups,
      },
      'trajectories_per_hour': tph,
      'learner_utilization': {
          k: r['learner_utilization'] for k, r in reports.items()
      },
      'speedup': tph['ready_first'] / tph['synchronous'],
  }


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
