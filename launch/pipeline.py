r"""The whole recipe, stage by stage: the README's main job.

  python -m launch.pipeline --config=tpu_configs/pipeline.py[:VARIANT] \
      --workdir=DIR [--config.stages="('index', 'tasks', ...)"]

How the variant is chosen: `--config=tpu_configs/pipeline.py` without a
variant (or with `:auto`), as `bash launch/run_main.sh` runs it, asks JAX
(in a subprocess) which devices it sees: a GPU or TPU runs `learn_accel`
(the learning run sized for one accelerator), a CPU runs `tiny` (the main
job on 2 cores). `:tiny`, `:learn_accel` or `:learn` names one instead
(`bash launch/run_main.sh --variant=NAME`). The first console line and
DIR/report.json (`variant`, `device_kind`, `variant_reason`) say which
variant ran, on what, and why.

Runs each stage of tpu_configs/pipeline.py as its own binary with its
workdir under DIR, reusing stages whose inputs and settings are unchanged
(DIR/stages.json), one console line per stage; ends with DIR/report.md and
DIR/report.json. A stage whose binary is not in this checkout stops the run
before anything starts, naming the missing module.
"""

import sys

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.pipeline import plan
from search_agent.pipeline import runner
from search_agent.pipeline import stages as stages_lib
from search_agent.pipeline import variant as variant_lib

_CONFIG = config_flags.DEFINE_config_file(
    'config',
    None,
    'tpu_configs/pipeline.py[:auto|:tiny|:learn_accel|:learn]; without a'
    ' variant (or :auto) the devices JAX sees choose it: GPU or TPU ->'
    ' learn_accel, CPU -> tiny.',
    lock_config=True,
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'The run directory.')
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  c = _CONFIG.value
  python = c.python or sys.executable
  if not c.device_kind:  # a named variant: ask what the stages will run on
    c.device_kind = variant_lib.probe(python).device_kind
  print(
      f'pipeline {c.variant} on {c.device_kind}: {c.variant_reason}',
      flush=True,
  )
  stages = plan.build(c)
  print(f'{len(stages)} stages into {_WORKDIR.value}')
  try:
    records = runner.run(
        stages, _WORKDIR.value, python=python,
        compilation_cache=c.compilation_cache,
    )  # fmt: skip
  except stages_lib.StageError as e:
    print(f'pipeline stopped: {e}', file=sys.stderr)
    sys.exit(1)
  total = sum(r.seconds for r in records if not r.reused)
  print(f'pipeline done in {total:.0f} s: {_WORKDIR.value}/report.md')


if __name__ == '__main__':
  app.run(main)
