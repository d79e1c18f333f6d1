"""Figures of the ready-first vs synchronous comparison in the real loop.

The command lines of the two runs, their throughput and idle summaries, and
the simulator re-run with costs fitted to the measured run; used by the
`loop_benchmark` binary (kept apart so tests import no flags).
"""

import json
import os
import pathlib
import sys

import numpy as np

from search_agent.train.rl import rollout_times
from search_agent.train.rl import scheduler as sched_lib
from search_agent.train.rl import simulator


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
