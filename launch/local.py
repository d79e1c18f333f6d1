"""Runs a launch config's binary locally, with the same argv XPK would run.

  python -m launch.local --config=tpu_configs/launch/sft.py:tiny

runs `python -m {module} --flag=value ...` (this interpreter) from the repo
root with the config's environment added, and exits with its status.
--dry_run prints the command line instead.
"""

import shlex
import sys
from typing import Sequence

from absl import app
from absl import flags
from ml_collections import config_flags

from launch import spec as spec_lib

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Launch config (tpu_configs/launch/*.py).', lock_config=True
)
_DRY_RUN = flags.DEFINE_bool(
    'dry_run', False, 'Print the command line instead of running it.'
)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  binary = spec_lib.binary_from_config(_CONFIG.value)
  if _DRY_RUN.value:
    env = [f'{k}={v}' for k, v in sorted(binary.env.items())]
    print(shlex.join([*env, *binary.argv(sys.executable)]))
    return
  sys.exit(spec_lib.run_local(binary))


if __name__ == '__main__':
  flags.mark_flag_as_required('config')
  app.run(main)
