"""SFT binary: `python -m search_agent.train.sft --config=tpu_configs/sft.py:tiny
--workdir=DIR`. Re-running with the same workdir resumes from its last
checkpoint. On a pod every host runs it (one process each, joined by
`search_agent.distributed`); locally `python -m launch.local
--config=tpu_configs/launch/sft.py:tiny --processes=2` does the same."""

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent import distributed
from search_agent.model import quiet_logs
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import trainer

_CONFIG = config_flags.DEFINE_config_file(
    'config',
    None,
    'SFT config file (tpu_configs/sft.py:tiny).',
    lock_config=True,
)
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'Checkpoints, metrics.jsonl and TensorBoard go here.'
)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  distributed.initialize()
  quiet_logs.install()
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  cfg = sft_config.from_config_dict(_CONFIG.value)
  trainer.train(cfg, _WORKDIR.value)


if __name__ == '__main__':
  app.run(main)
