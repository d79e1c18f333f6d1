r"""Compares two eval runs as a table and a plot.

  python -m eval.compare --runs=DIR_A,DIR_B --names=no_cm,discard_all \
      --out=DIR

writes DIR/compare.md (table), compare.json and compare.png (plot).
"""

import pathlib
import sys

from absl import app
from absl import flags

from search_agent.evaluation import comparison

_RUNS = flags.DEFINE_list('runs', None, 'Two eval workdirs (A,B).')
_NAMES = flags.DEFINE_list('names', ['A', 'B'], 'Names of the two runs.')
_OUT = flags.DEFINE_string('out', None, 'Output directory.')
flags.mark_flags_as_required(['runs', 'out'])


def main(argv):
  del argv
  out = pathlib.Path(_OUT.value)
  summary = comparison.compare(_RUNS.value, _NAMES.value, out)
  print((out / 'compare.md').read_text())
  for w in summary['warnings']:
    print(f'eval.compare: WARNING: {w}', file=sys.stderr)
  print(
      f'eval.compare: paired {summary["paired"]["questions"]} questions',
      file=sys.stderr,
  )


if __name__ == '__main__':
  app.run(main)
