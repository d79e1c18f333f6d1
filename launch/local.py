"""Runs a launch config's binary locally, with the same argv XPK would run.

  python -m launch.local --config=tpu_configs/launch/sft.py:tiny --processes=2

runs `python -m {module} --flag=value ...` (this interpreter) from the repo
root with the config's environment added, as `--processes` processes joined
into one JAX program on 127.0.0.1 with the environment a pod's hosts get
(`launch.processes`; on CPU the `--devices` host devices are split evenly),
and exits with the first non-zero status. --dry_run prints each process's
command line instead.
"""

import shlex
import sys
from typing import Sequence

from absl import app
from absl import flags
from ml_collections import config_flags

from launch import processes as processes_lib
from launch import spec as spec_lib

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Launch config (tpu_configs/launch/*.py).', lock_config=True
)
_PROCESSES = flags.DEFINE_integer(
    'processes', 1, 'Processes (hosts) to run the binary as.'
)
_DEVICES = flags.DEFINE_integer(
    'devices',
    8,
    'CPU host devices in all, split evenly over the processes (0: leave'
    ' XLA_FLAGS as it is, e.g. on accelerators).',
)
_DRY_RUN = flags.DEFINE_bool(
    'dry_run', False, 'Print the command line instead of running it.'
)


def main(argv: Sequence[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  binary = spec_lib.binary_from_config(_CONFIG.value)
  layout = processes_lib.Layout(
      processes=_PROCESSES.value, devices=_DEVICES.value
  )
  if _DRY_RUN.value:
    for i in range(layout.processes):
      env = processes_lib.process_env(binary.env, layout, i, port=0)
      env = [f'{k}={v}' for k, v in sorted(env.items())]
      print(shlex.join([*env, *binary.argv(sys.executable)]))
    return
  sys.exit(processes_lib.run(binary, layout))


if __name__ == '__main__':
  flags.mark_flag_as_required('config')
  app.run(main)
