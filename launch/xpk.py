r"""Launches a binary on a TPU pod with XPK (`xpk workload create`).

  python -m launch.xpk --config=tpu_configs/launch/sft.py --dry_run

prints the command; without --dry_run it runs it (needs `xpk` on PATH and
a cluster made by `xpk cluster create`). The xpk flags used, and where xpk
defines them, are listed in launch.spec.xpk_command.
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
    'dry_run', False, 'Print the xpk command instead of running it.'
)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  binary = spec_lib.binary_from_config(_CONFIG.value)
  target = spec_lib.xpk_from_config(_CONFIG.value)
  cmd = spec_lib.xpk_command(binary, target)
  if _DRY_RUN.value:
    print(shlex.join(cmd))
    return
  binary.check_module()
  sys.exit(spec_lib.launch(cmd))


if __name__ == '__main__':
  flags.mark_flag_as_required('config')
  app.run(main)
