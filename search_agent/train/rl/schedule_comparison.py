"""Figures of the ready-first vs synchronous comparison in the real loop.

The command lines of the two runs, their throughput and idle summaries, the
measured group-time spread, and the simulator re-run with costs fitted to
the measured runs; used by the `loop_benchmark` binary (kept apart so tests
import no flags).

The shape is the seed's, scaled down (`Shape`): more worker slots than
groups per ready-first update (42 : 32 in the seed), a synchronous step of
one group per slot (the simulator's equal-resources baseline), and as many
groups trained in both runs. Generations are one short assistant call over
a compact prompt, so the tiny model's compute is a small share of a group's
time and the injected latency sets it.
"""

import dataclasses
import json
import os
import pathlib
import sys

import numpy as np

from search_agent.train.rl import rollout_times
from search_agent.train.rl import scheduler as sched_lib
from search_agent.train.rl import simulator

MODES = ('ready_first', 'synchronous')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shape:
  """What both runs share, and the ready-first schedule's sizes.

  Attributes:
    slots: Groups the rollout worker runs at once; the synchronous step.
    groups_per_update: Ready-first update size (< slots, as the seed's 32
      groups on 42 slots).
    start_after_ready: Ready-first: ready groups before a gradient chunk.
    admission_window: Ready-first: dispatch batches ahead of the learner.
    dispatch_batch_groups: Groups in a dispatch batch: the tiny task pool
      (40 questions), so a batch is one pass (a batch that straddles the end
      of a pass can hold a question twice, and the scheduler's group ids,
      task@batch, collide). The window (8 x 40 groups ahead) never binds
      with `slots` groups running, as in the seed (8 x 32 on 42 slots).
    sync_updates: Synchronous updates; ready-first runs as many groups.
    warmup_sync_updates: Updates left out of the measurement, and as many
      groups of ready-first (its first update compiles while generation
      goes on, and the groups that pile up meanwhile speed up the next
      few updates: startup, not the schedule).
    group_size: Rollouts per group.
    median_s: Median injected group latency (s) ...
    p99_s: ... and its 99th percentile.
  """

  slots: int = 40
  groups_per_update: int = 30
  start_after_ready: int = 8
  admission_window: int = 8
  dispatch_batch_groups: int = 40
  sync_updates: int = 9
  warmup_sync_updates: int = 3
  group_size: int = 2
  median_s: float = 25.0
  p99_s: float = 25.0 * 91.7 / 23.6

  def updates(self, mode: str) -> int:
    """Updates of `mode`'s run (both train the same number of groups).

    Raises:
      ValueError: ready-first cannot train exactly as many groups.
    """
    if mode == 'synchronous':
      return self.sync_updates
    groups = self.sync_updates * self.slots
    if groups % self.groups_per_update:
      raise ValueError(
          f'{self.sync_updates} synchronous updates of {self.slots} groups'
          f' are not a whole number of ready-first updates of'
          f' {self.groups_per_update}'
      )
    return groups // self.groups_per_update

  def warmup(self, mode: str) -> int:
    """Updates of `mode` before the measured window.

    Raises:
      ValueError: unless 1 <= warmup_sync_updates < sync_updates (the
        window starts at the end of an update and holds one at least), or
        as `updates`.
    """
    if not 1 <= self.warmup_sync_updates < self.sync_updates:
      raise ValueError(
          f'warm-up of {self.warmup_sync_updates} synchronous updates: need'
          f' 1 <= warm-up < the {self.sync_updates} updates'
      )
    return dataclasses.replace(
        self, sync_updates=self.warmup_sync_updates
    ).updates(mode)

  def groups_in_update(self, mode: str) -> int:
    return self.slots if mode == 'synchronous' else self.groups_per_update


def runs_in_the_way(workdir: str, shape: Shape, reuse: bool) -> list[str]:
  """The mode directories under `workdir` that hold a previous run the
  benchmark would not keep (`reuse` keeps the complete ones): rl.run
  resumes a workdir, so starting there would measure the old run (or a
  resumed one, its restart included) as this one."""
  out = []
  for mode in MODES:
    wd = pathlib.Path(workdir) / mode
    if not wd.is_dir() or not any(wd.iterdir()):
      continue
    path = wd / 'metrics.jsonl'
    done = path.is_file() and sum(
        1 for l in path.read_text(encoding='utf-8').splitlines() if l.strip()
    ) >= shape.updates(mode)
    if not (reuse and done):
      out.append(str(wd))
  return out


def run_args(mode: str, workdir: str, shape: Shape) -> list[str]:
  """The binary's command line of one schedule."""
  sync = mode == 'synchronous'
  s = shape
  return [
      sys.executable, '-m', 'search_agent.train.rl.run',
      '--config=tpu_configs/rl.py:tiny', f'--workdir={workdir}',
      f'--config.max_updates={s.updates(mode)}',
      f'--config.group_size={s.group_size}',
      f'--config.scheduler.groups_per_update={s.groups_in_update(mode)}',
      '--config.scheduler.start_after_ready='
      f'{1 if sync else s.start_after_ready}',
      f'--config.scheduler.dispatch_batch_groups={s.dispatch_batch_groups}',
      f'--config.scheduler.admission_window={s.admission_window}',
      f'--config.scheduler.synchronous={sync}',
      f'--config.rollout.max_groups={s.slots}',
      # One short assistant call over a ~130-token prompt: the compute of a
      # group is a small share of its injected latency.
      '--config.rollout.system_prompt=agent_system_compact.md',
      '--config.rollout.tool_text=signature',
      '--config.rollout.max_agent_steps=1',
      '--config.rollout.max_tokens_per_call=8',
      '--config.rollout.min_output_tokens=4',
      '--config.rollout.context_limit=264',
      '--config.sampler.max_new_tokens=8',
      '--config.sampler.max_prompt_len=256',
      '--config.sampler.batch_size=16',
      '--config.learner.seq_len=256',
      f'--config.learner.microbatch_size={s.group_size}',  # a group each
      '--config.model.logits_chunk=256',
      f'--config.rollout.latency_median_s={s.median_s}',
      f'--config.rollout.latency_p99_s={s.p99_s}',
  ]  # fmt: skip


def spread(seconds) -> dict:
  """Median, 99th percentile and their ratio of group times."""
  x = np.asarray(seconds, dtype=float)
  p50, p99 = float(np.median(x)), float(np.quantile(x, 0.99))
  return {
      'groups': int(x.size),
      'p50': p50,
      'p99': p99,
      'p99_over_p50': p99 / p50,
  }


def summarize(metrics: list[dict], skip: int = 1) -> dict:
  """Throughput and learner idle share after the first `skip` updates."""
  steady = metrics[skip:]
  wall = metrics[-1]['time'] - metrics[skip - 1]['time']
  trajs = sum(m['trajectories'] for m in steady)
  busy = sum(m['learner_busy_seconds'] for m in steady)
  return {
      'updates_measured': len(steady),
      'seconds': wall,
      'trajectories': trajs,
      'trajectories_per_hour': 3600.0 * trajs / wall,
      'learner_idle_share': 1.0 - busy / wall,
      'learner_seconds_per_group': busy
      / max(sum(m['groups_used'] for m in steady), 1),
      'tokens_past_age_limit': sum(m['tokens_past_age_limit'] for m in metrics),
      'max_token_age': max(
          max((a for a, n in enumerate(m['token_age_hist']) if n), default=0)
          for m in metrics
      ),
      'group_seconds_p50': [m['group_seconds_p50'] for m in metrics],
  }


def group_metas(workdir: str, min_batch: int = 0) -> list[dict]:
  """The meta (and dispatch batch) of every delivered group of a run from
  dispatch batch `min_batch` on (synchronous: batch = step)."""
  root = pathlib.Path(workdir) / 'queue' / 'groups'
  out = []
  for p in sorted(root.glob('*.json')):
    g = json.loads(p.read_text())
    if g['dispatch_batch'] >= min_batch:
      out.append({**g['meta'], 'dispatch_batch': g['dispatch_batch']})
  return out


def group_seconds(workdir: str, min_batch: int = 0) -> list[float]:
  """Completion times of the delivered groups of a run."""
  return [m.get('seconds', 0.0) for m in group_metas(workdir, min_batch)]


def compute_share(metas: list[dict]) -> float:
  """Share of groups whose time exceeds their injected draw by > 1 s (the
  tiny model's compute or queueing, not the latency, set their time)."""
  over = [
      m['seconds'] - m['injected_latency_s'] > 1.0
      for m in metas
      if 'injected_latency_s' in m
  ]
  return float(np.mean(over)) if over else 0.0


def fitted_simulation(workdir: str, shape: Shape, updates: int = 50) -> dict:
  """The simulator with costs fitted to the measured runs.

  Group times: the synchronous run's measured steps (every dispatched
  group finishes there; ready-first's last in-flight groups, the slow
  ones, never do). Learner cost per group: the ready-first run's busy
  seconds per group in its measured updates.
  """
  sync_secs = group_seconds(
      os.path.join(workdir, 'synchronous'), shape.warmup('synchronous')
  )
  with open(
      os.path.join(workdir, 'ready_first', 'metrics.jsonl'), encoding='utf-8'
  ) as f:
    ms = [json.loads(l) for l in f if l.strip()][shape.warmup('ready_first') :]
  per_group = sum(m['learner_busy_seconds'] for m in ms) / sum(
      m['groups_used'] for m in ms
  )
  sp = spread(sync_secs)
  base = simulator.SimConfig(
      cluster=simulator.ClusterConfig(
          generation_nodes=1, group_slots_per_node=shape.slots,
          training_nodes=1,
          learner_node_minutes_per_group=per_group / 60.0,
          apply_minutes=0.01, turn_minutes=sp['p50'] / 60.0,
      ),
      times=rollout_times.GroupTimes(
          median_min=sp['p50'] / 60.0,
          p99_min=max(sp['p99'], sp['p50'] * 1.01) / 60.0,
      ),
      scheduler=sched_lib.SchedulerConfig(
          groups_per_update=shape.groups_per_update,
          start_after_ready=shape.start_after_ready,
          dispatch_batch_groups=shape.dispatch_batch_groups,
          admission_window=shape.admission_window,
      ),
      updates=updates,
  )  # fmt: skip
  out = {
      'fitted': {
          'group_seconds_median': sp['p50'],
          'group_seconds_p99': sp['p99'],
          'learner_seconds_per_group': per_group,
      },
  }
  # 'run_length': each schedule as many updates as its real run (the
  # simulator's clock starts at 0, so startup counts); 'steady': `updates`.
  for name in ('run_length', 'steady'):
    reports = {}
    for mode in MODES:
      u = shape.updates(mode) if name == 'run_length' else updates
      cfg = simulator.mode_config(
          dataclasses.replace(base, updates=u), mode, 0.0
      )
      reports[mode] = simulator.simulate(cfg)
    # The simulator counts 4 rollouts a group.
    tph = {
        k: r['trajectories_per_hour'] * shape.group_size / 4
        for k, r in reports.items()
    }
    out[name] = {
        'updates': {
            k: shape.updates(k) if name == 'run_length' else updates
            for k in MODES
        },
        'trajectories_per_hour': tph,
        'learner_idle_share': {
            k: 1.0 - r['learner_utilization'] for k, r in reports.items()
        },
        'max_token_age': reports['ready_first']['max_token_age'],
        'speedup': tph['ready_first'] / tph['synchronous'],
    }
  return out
