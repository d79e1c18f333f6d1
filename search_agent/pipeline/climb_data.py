r"""Writes the SFT data of one SFT-RL climb (`pipeline/climb.py`).

  python -m search_agent.pipeline.climb_data \
      --selected=RL/climbing/sft_train.jsonl \
      [--demonstrations=SPLIT/train.jsonl] --workdir=OUT

Writes OUT/train.jsonl (the selected rollouts, then the demonstrations,
duplicates dropped) and OUT/climb.json (the counts, also printed).
"""

import json

from absl import app
from absl import flags

from search_agent.pipeline import climb

_SELECTED = flags.DEFINE_string('selected', None, "RL's climbing selection.")
_DEMOS = flags.DEFINE_string(
    'demonstrations', '', 'SFT demonstrations to mix in ("" = none).'
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  counts = climb.merge(_SELECTED.value, _DEMOS.value, _WORKDIR.value)
  print(json.dumps(counts))


if __name__ == '__main__':
  flags.mark_flags_as_required(['selected', 'workdir'])
  app.run(main)
