r"""Writes the tasks RL trained on (search_agent/pipeline/rl_seen_job.py).

  python -m search_agent.pipeline.rl_seen --rl=RL_WORKDIR \
      [--tasks=TASKS.jsonl] [--reach=N] --workdir=OUT

writes OUT/tasks.jsonl (the task file's rows, first use first) and
OUT/seen.json (counts); with --reach=N > 0 also OUT/siblings.jsonl and
OUT/untouched.jsonl (up to N tasks RL did not train on, sharing an evidence
page with one it did, and sharing none).
"""

import json

from absl import app
from absl import flags

from search_agent.pipeline import rl_seen_job

_RL = flags.DEFINE_string('rl', None, 'The RL run workdir.')
_TASKS = flags.DEFINE_string(
    'tasks',
    '',
    "The task JSONL RL drew from, used where the RL run's manifest names"
    ' none or its file is gone and this one has the recorded content.',
)
_REACH = flags.DEFINE_integer(
    'reach',
    0,
    'Tasks in each of siblings.jsonl and untouched.jsonl (0 = neither).',
    lower_bound=0,
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  try:
    counts = rl_seen_job.write(
        _RL.value, _TASKS.value or None, _WORKDIR.value, _REACH.value
    )
  except rl_seen_job.SeenError as e:
    raise SystemExit(f'rl_seen: {e}') from e
  print(json.dumps(counts))


if __name__ == '__main__':
  flags.mark_flags_as_required(['rl', 'workdir'])
  app.run(main)
