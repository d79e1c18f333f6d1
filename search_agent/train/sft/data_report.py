"""SFT data report binary: supervised-token coverage of a config's data.

  python -m search_agent.train.sft.data_report \\
      --config=tpu_configs/sft.py:tiny --workdir=/tmp/sft_report

Prints a few lines and the JSON report (`coverage.make_report`) and writes
`<workdir>/data_report.json`. The tiny config trains its tokenizer into
`<workdir>/tokenizer` (once), as the trainer does.
"""

import json

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.train.sft import config as sft_config
from search_agent.train.sft import coverage
from search_agent.train.sft import inputs

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'SFT config (tpu_configs/sft.py:tiny).', lock_config=True
)
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'The report (and the tiny tokenizer) go here.'
)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  cfg = sft_config.from_config_dict(_CONFIG.value)
  report = coverage.make_report(cfg, inputs.Inputs(cfg, _WORKDIR.value).render)
  coverage.write_report(_WORKDIR.value, report)
  print(coverage.format_report(report))
  print(json.dumps(report, sort_keys=True))


if __name__ == '__main__':
  app.run(main)
