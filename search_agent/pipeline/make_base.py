r"""Makes the shipped tiny base model again and checks it against the shipped one.

  python -m search_agent.pipeline.make_base --workdir=DIR

runs the `learn` pipeline's tokenizer and pretraining stages into DIR (the
4-layer tiny MoE, UPDATES = 500 updates on 95% shuffle sequences at a constant
step: what the `tiny` main job imports instead of pretraining), exports DIR/base (model.safetensors,
the tokenizer, manifest.json) and compares its file hashes with the shipped
base (`--shipped`): exit 0 when every file matches. Float rounding differs
between CPU types and XLA builds, so on another machine the parameters may
differ in their last bits; the comparison then prints the largest parameter
difference and both runs' final figures. `--out` writes the export there
instead (how the shipped base is made: `--out=` the shipped directory).
"""

import json
import os
import subprocess
import sys

from absl import app
from absl import flags
import numpy as np
import orbax.checkpoint as ocp

from search_agent import digests
from search_agent.model import checkpoint_params
from search_agent.pipeline import base_model
from search_agent.pipeline import figures
from search_agent.pipeline import plan
from search_agent.pipeline import stages as stages_lib
from tpu_configs import pipeline as pipeline_config
from tpu_configs import sft as sft_config

SHIPPED = 'search_agent/pipeline/data/base_tiny4'
VARIANT = 'learn'
STAGES = ('tokenizer', 'pretrain')
# Pretraining updates: `learn`'s step is constant after warmup, so this is
# also the step-UPDATES checkpoint of a longer `learn` pretraining.
UPDATES = 500

_WORKDIR = flags.DEFINE_string('workdir', None, 'Run directory.')
_OUT = flags.DEFINE_string('out', '', "Export here ('' = WORKDIR/base).")
_SHIPPED = flags.DEFINE_string('shipped', SHIPPED, 'The base to compare.')
_NOTE = flags.DEFINE_string('note', '', 'Provenance, kept in the manifest.')
_EXPORT_ONLY = flags.DEFINE_bool(
    'export_only', False, "Export WORKDIR's pretraining without running it."
)


def pipeline_argv(workdir: str) -> list[str]:
  return [
      sys.executable, '-m', 'launch.pipeline',
      f'--config=tpu_configs/pipeline.py:{VARIANT}', f'--workdir={workdir}',
      f'--config.stages={STAGES!r}', f'--config.pretrain.updates={UPDATES}',
  ]  # fmt: skip


def planned_stages() -> dict[str, stages_lib.Stage]:
  """The tokenizer and pretrain stages pipeline_argv runs, with hashes."""
  c = pipeline_config.get_config(VARIANT)
  c.stages = STAGES
  c.pretrain.updates = UPDATES
  return {s.name: s for s in plan.build(c)}


def latest_params(pretrain_dir: str) -> tuple[dict, int]:
  """The flat parameters of a trainer workdir's newest checkpoint."""
  step_dir, step = checkpoint_params.resolve_step(pretrain_dir)
  with ocp.PyTreeCheckpointer() as reader:
    state = reader.restore(os.path.join(step_dir, 'state'))
  params = base_model.flatten(state['params'])
  return {k: np.asarray(v) for k, v in params.items()}, step


def _final(metrics_dir: str, step: int) -> dict:
  """The last train and validation figures at or before `step`."""
  c = figures.train_curve(metrics_dir)
  out = {}
  for key in ('train', 'val', 'copy_nll'):
    points = [p for p in c[key] if p[0] <= step]
    if points:
      step, value = points[-1]
      out[f'{key}_nll' if key != 'copy_nll' else key] = round(value, 4)
      out[f'{key}_step'] = step
  return out


def made(workdir: str, step: int) -> dict:
  """The manifest's record of how the base was made."""
  stages, hashes = planned_stages(), {}
  for name, stage in stages.items():
    hashes[name] = stages_lib.stage_hash(stage, hashes)
  return {
      'command': (
          'python -m search_agent.pipeline.make_base --workdir=DIR'
          ' (runs: python ' + ' '.join(pipeline_argv('DIR')[1:]) + ')'
      ),
      'stages': {
          name: {
              'argv': stage.argv('python', 'DIR')[1:],
              'hash': hashes[name],
              'fingerprint': stage.fingerprint(),
          }
          for name, stage in stages.items()
      },
      'corpus': plan.BUNDLED_CORPUS,
      'corpus_sha256': digests.file_sha256(plan.BUNDLED_CORPUS),
      'seed': {
          'data.seed': sft_config.get_config('pretrain_tiny').data.seed,
          'init': "MaxText's init_weights_seed (0, its base.yml default)",
      },
      'step': step,
      'final': _final(os.path.join(workdir, 'pretrain'), step),
  }


def compare(new_dir: str, shipped_dir: str) -> list[str]:
  """Lines on every file that differs (empty: all match)."""
  new = base_model.read_manifest(new_dir)
  old = base_model.read_manifest(shipped_dir)
  lines = [
      f'{name}: sha256 {new["files"].get(name, {}).get("sha256", "-")[:12]}'
      f' here, {want["sha256"][:12]} shipped'
      for name, want in old['files'].items()
      if new['files'].get(name, {}).get('sha256') != want['sha256']
  ]
  if lines and base_model.PARAMS_FILE in ' '.join(lines):
    a, b = base_model.load_params(new_dir), base_model.load_params(shipped_dir)
    if set(a) == set(b):
      diff = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
      lines.append(f'largest parameter difference {diff:.3g}')
    lines.append(f'final figures here {new["final"]}, shipped {old["final"]}')
  return lines


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  workdir = _WORKDIR.value
  if not _EXPORT_ONLY.value:
    code = subprocess.run(pipeline_argv(workdir), check=False).returncode
    if code:
      sys.exit(code)
  params, step = latest_params(os.path.join(workdir, 'pretrain'))
  if step != UPDATES:
    raise SystemExit(
        f'{workdir}/pretrain: newest checkpoint {step}, not {UPDATES}'
    )
  out = _OUT.value or os.path.join(workdir, 'base')
  record = made(workdir, step)
  if _NOTE.value:
    record['note'] = _NOTE.value
  manifest = base_model.export(
      params, os.path.join(workdir, 'tokenizer'), out, record
  )
  print(json.dumps({'base': out, 'files': manifest['files']}, indent=1))
  if os.path.abspath(out) == os.path.abspath(_SHIPPED.value):
    return
  diffs = compare(out, _SHIPPED.value)
  if diffs:
    print('differs from the shipped base:\n  ' + '\n  '.join(diffs))
    sys.exit(1)
  print(f'every file matches the shipped base {_SHIPPED.value}')


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
