r"""Writes RL's question pool from a probe of the SFT policy.

  python -m search_agent.pipeline.rl_pool --tasks=TASKS.jsonl \
      --probe=EVAL_DIR --workdir=OUT [--unsolved_fraction=0.25] \
      [--min_tasks=16] [--seed=0]

Keeps the tasks the probe (eval.run's results.jsonl) answered plus
unsolved_fraction as many it missed (search_agent/pipeline/rl_pool_job.py);
writes OUT/tasks.jsonl and OUT/pool.json.
"""

import json

from absl import app
from absl import flags

from search_agent.pipeline import rl_pool_job

_TASKS = flags.DEFINE_string('tasks', None, 'Train task JSONL.')
_PROBE = flags.DEFINE_string('probe', None, 'eval.run workdir of the probe.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_UNSOLVED = flags.DEFINE_float(
    'unsolved_fraction', 0.25, 'Missed tasks kept, per answered task kept.'
)
_MIN_TASKS = flags.DEFINE_integer('min_tasks', 16, 'Fewest tasks to keep.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of the missed tasks drawn.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  try:
    counts = rl_pool_job.build(
        _TASKS.value,
        _PROBE.value,
        _WORKDIR.value,
        _UNSOLVED.value,
        _MIN_TASKS.value,
        _SEED.value,
    )
  except rl_pool_job.PoolError as e:
    raise SystemExit(f'rl_pool: {e}') from e
  print(json.dumps(counts))


if __name__ == '__main__':
  flags.mark_flags_as_required(['tasks', 'probe', 'workdir'])
  app.run(main)
