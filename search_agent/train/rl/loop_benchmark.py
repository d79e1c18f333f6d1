r"""Ready-first vs synchronous in the real RL loop, at equal resources.

  python -m search_agent.train.rl.loop_benchmark --workdir=DIR \
      [--slots=40] [--groups_per_update=30] [--updates=9] [--median_s=25] \
      [--p99_s=97.1] [--start_after_ready=8] [--admission_window=8] \
      [--group_size=2] [--warmup_updates=3] [--reuse]

Runs `search_agent.train.rl.run` (--role=all, tiny config) twice on the same
model, tasks, worker slots and number of groups, in the seed's shape scaled
down (schedule_comparison.Shape): ready-first with `groups_per_update` groups
an update on `slots` worker slots (the seed: 32 on 42), and synchronous,
each step one group per slot, waiting for all of them (`updates` steps;
ready-first runs as many groups). Every group's completion is held to a
seeded lognormal draw (the seed's spread: p99/p50 = 91.7/23.6 = 3.9)
standing in for tool latency, stratified over the 40-question pool (each
pass gives each of the 40 quantile bands to one question) so that a few
passes show the seed's spread; the k-th dispatched question gets the same
draw in both runs. Writes DIR/benchmark.json with trajectories/hour and the
learner's idle share, measured from the end of the `warmup_updates`-th
synchronous update (ready-first: of as many groups; startup, compilation
and the groups that pile up meanwhile excluded) to the end of the last
(also from the end of the first update); the measured group-time
spread; the token ages; and the simulator re-run with costs fitted to what
the runs measured. Each run logs to DIR/<mode>/run.log; progress is printed.
"""

import json
import os
import subprocess
import time

from absl import app
from absl import flags

from search_agent.train.rl import schedule_comparison as sc

_D = sc.Shape()
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_WARMUP = flags.DEFINE_integer(
    'warmup_updates', _D.warmup_sync_updates,
    'Synchronous updates left out of the measurement (ready-first: as'
    ' many groups).',
)  # fmt: skip
_UPDATES = flags.DEFINE_integer(
    'updates', _D.sync_updates,
    'Synchronous updates; ready-first trains as many groups.',
)  # fmt: skip
_SLOTS = flags.DEFINE_integer(
    'slots', _D.slots, 'Groups the worker runs at once (= synchronous step).'
)
_GROUPS = flags.DEFINE_integer(
    'groups_per_update', _D.groups_per_update, 'Ready-first update size.'
)
_START = flags.DEFINE_integer(
    'start_after_ready', _D.start_after_ready,
    'Ready-first: ready groups before a gradient chunk.',
)  # fmt: skip
_WINDOW = flags.DEFINE_integer(
    'admission_window', _D.admission_window,
    'Ready-first: dispatch batches ahead of the learner.',
)  # fmt: skip
_GROUP_SIZE = flags.DEFINE_integer('group_size', _D.group_size, 'Rollouts.')
_MEDIAN = flags.DEFINE_float('median_s', _D.median_s, 'Median latency (s).')
_P99 = flags.DEFINE_float('p99_s', _D.p99_s, 'p99 group latency (s).')
_REUSE = flags.DEFINE_bool(
    'reuse', False,
    'Keep runs whose metrics.jsonl is complete (else DIR/<mode> must be'
    ' empty or absent).',
)  # fmt: skip


def _lines(path: str) -> list[dict]:
  if not os.path.exists(path):
    return []
  with open(path, encoding='utf-8') as f:
    return [json.loads(l) for l in f if l.strip()]


def _run(mode: str, wd: str, shape: sc.Shape) -> None:
  """Runs one schedule, printing a line per update."""
  os.makedirs(wd, exist_ok=True)
  path, total = os.path.join(wd, 'metrics.jsonl'), shape.updates(mode)
  t0, seen = time.monotonic(), 0
  with open(os.path.join(wd, 'run.log'), 'w', encoding='utf-8') as log:
    proc = subprocess.Popen(
        sc.run_args(mode, wd, shape), stdout=log, stderr=subprocess.STDOUT
    )
    while proc.poll() is None:
      time.sleep(5.0)
      ms = _lines(path)
      for m in ms[seen:]:
        print(f'[{mode}] update {m["update"]}/{total} at'
              f' {time.monotonic() - t0:.0f}s: {m["groups_used"]} groups,'
              f' group p50 {m["group_seconds_p50"]:.1f}s max'
              f' {m["group_seconds_max"]:.1f}s, learner busy'
              f' {m["learner_busy_seconds"]:.1f}s of'
              f' {m["update_seconds"]:.1f}s', flush=True)  # fmt: skip
      seen = len(ms)
  if proc.returncode:
    raise RuntimeError(
        f'{mode} run failed (rc {proc.returncode}); see {log.name}'
    )


def main(argv):
  del argv
  shape = sc.Shape(
      slots=_SLOTS.value, groups_per_update=_GROUPS.value,
      start_after_ready=_START.value, admission_window=_WINDOW.value,
      sync_updates=_UPDATES.value, warmup_sync_updates=_WARMUP.value,
      group_size=_GROUP_SIZE.value,
      median_s=_MEDIAN.value, p99_s=_P99.value,
  )  # fmt: skip
  for mode in sc.MODES:
    shape.warmup(mode)  # fails early on a shape with unequal group counts
    shape.updates(mode)
  if stale := sc.runs_in_the_way(_WORKDIR.value, shape, _REUSE.value):
    raise app.UsageError(
        f'a previous run that rl.run would resume is in {", ".join(stale)};'
        ' remove it (or pass --reuse to keep a complete one)'
    )
  out = {}
  for mode in sc.MODES:
    wd = os.path.join(_WORKDIR.value, mode)
    path = os.path.join(wd, 'metrics.jsonl')
    if not (_REUSE.value and len(_lines(path)) >= shape.updates(mode)):
      print(f'[{mode}] {shape.updates(mode)} updates of'
            f' {shape.groups_in_update(mode)} groups on {shape.slots}'
            ' slots', flush=True)  # fmt: skip
      _run(mode, wd, shape)
    ms = _lines(path)
    out[mode] = sc.summarize(ms, shape.warmup(mode))
    out[mode]['after_first_update'] = sc.summarize(ms, 1)
    # Synchronous: the groups of the measured steps (all finish); ready-
    # first: every delivered group (its slowest never finish before the end).
    metas = sc.group_metas(
        wd, shape.warmup(mode) if mode == 'synchronous' else 0
    )
    out[mode]['group_seconds'] = sc.spread([m['seconds'] for m in metas])
    out[mode]['injected_latency_s'] = sc.spread(
        [m['injected_latency_s'] for m in metas if 'injected_latency_s' in m]
        or [0.0]
    )
    out[mode]['compute_bound_group_share'] = sc.compute_share(metas)
    print(mode, json.dumps(out[mode]), flush=True)
  ratio = (
      out['ready_first']['trajectories_per_hour']
      / out['synchronous']['trajectories_per_hour']
  )
  out['speedup'] = ratio
  out['speedup_after_first_update'] = (
      out['ready_first']['after_first_update']['trajectories_per_hour']
      / out['synchronous']['after_first_update']['trajectories_per_hour']
  )
  out['settings'] = {
      'slots': shape.slots, 'groups_per_update': shape.groups_per_update,
      'start_after_ready': shape.start_after_ready,
      'admission_window': shape.admission_window,
      'updates': {m: shape.updates(m) for m in sc.MODES},
      'warmup_updates': {m: shape.warmup(m) for m in sc.MODES},
      'group_size': shape.group_size,
      'median_s': shape.median_s, 'p99_s': shape.p99_s,
  }  # fmt: skip
  out['simulator_fitted'] = sc.fitted_simulation(_WORKDIR.value, shape)
  with open(os.path.join(_WORKDIR.value, 'benchmark.json'), 'w') as f:
    json.dump(out, f, indent=1)
  g = out['synchronous']['group_seconds']
  print(f'ready-first / synchronous = {ratio:.2f}x trajectories/hour after'
        f' {shape.warmup_sync_updates * shape.slots} warm-up groups'
        f' ({out["speedup_after_first_update"]:.2f}x after the first'
        ' update)')  # fmt: skip
  print(f'group seconds (synchronous run, measured steps): p50 {g["p50"]:.1f}'
        f' p99 {g["p99"]:.1f} p99/p50 {g["p99_over_p50"]:.2f}')  # fmt: skip
  print('simulator, costs fitted to the runs:',
        json.dumps(out['simulator_fitted']))  # fmt: skip


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
