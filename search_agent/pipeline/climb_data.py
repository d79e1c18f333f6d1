r"""Writes the SFT data of one SFT-RL climb (`pipeline/climb_data_job.py`).

  python -m search_agent.pipeline.climb_data --rl_workdir=RL \
      [--demonstrations=SPLIT/train.jsonl] [--min_pass=0 --max_pass=1 \
      --min_tool_turns=1] --workdir=OUT

RL is a finished `train.rl.run` workdir. Writes OUT/train.jsonl (the
selected rollouts, then the demonstrations, duplicates dropped) and
OUT/climb.json (the counts, also printed).
"""

import json

from absl import app
from absl import flags

from search_agent.filtering import climb_selection
from search_agent.pipeline import climb_data_job

_RL = flags.DEFINE_string('rl_workdir', None, 'A finished RL run.')
_MIN_PASS = flags.DEFINE_float('min_pass', 0.0, 'Pass rate must exceed it.')
_MAX_PASS = flags.DEFINE_float('max_pass', 1.0, 'Pass rate must be below.')
_MIN_TURNS = flags.DEFINE_integer(
    'min_tool_turns', 1, 'Tool calls a selected rollout needs.'
)
_DEMOS = flags.DEFINE_string(
    'demonstrations', '', 'SFT demonstrations to mix in ("" = none).'
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  band = climb_selection.ClimbConfig(
      min_pass=_MIN_PASS.value,
      max_pass=_MAX_PASS.value,
      min_tool_turns=_MIN_TURNS.value,
  )
  counts = climb_data_job.merge(_RL.value, _DEMOS.value, _WORKDIR.value, band)
  print(json.dumps(counts))


if __name__ == '__main__':
  flags.mark_flags_as_required(['rl_workdir', 'workdir'])
  app.run(main)
