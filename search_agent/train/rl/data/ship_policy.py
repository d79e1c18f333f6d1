"""Ships a training run's checkpoint as a params-only policy fixture.

  python -m search_agent.train.rl.data.ship_policy --workdir=W --out=DIR \\
    [--step=-1] [--manifest=EXTRA.json]

Restores `<W>/checkpoints/<step>/state`'s `params` subtree (as saved: the
optimizer state is never read) and saves it alone as
`<DIR>/checkpoints/<step>/state` = {'params': ...} (the form
`checkpoint_params.restore_params` and `rl.py`'s `init.sft_workdir` read),
copies the run's tokenizer/ (`--tokenizer`, default `<W>/tokenizer/`), and writes `<DIR>/MANIFEST.json`: `--manifest`'s
fields (what it is, how it was made, figures), the parameter count and the
sha256 of every file under DIR but MANIFEST.json (files already there, e.g.
seeds.jsonl, included).
"""

import json
import os
import shutil

from absl import app
from absl import flags
import numpy as np
import orbax.checkpoint as ocp

from search_agent import digests
from search_agent import paths
from search_agent.model import checkpoint_params

_WORKDIR = flags.DEFINE_string('workdir', None, 'The training workdir.')
_OUT = flags.DEFINE_string('out', None, 'The fixture directory.')
_STEP = flags.DEFINE_integer('step', -1, 'Step to ship (-1 = the newest).')
_TOKENIZER = flags.DEFINE_string(
    'tokenizer',
    '',
    "The run's tokenizer/ directory ('' = <workdir>/tokenizer;"
    " a run started with init_from uses that workdir's).",
)
_MANIFEST = flags.DEFINE_string(
    'manifest', '', 'JSON file of fields to put in MANIFEST.json.'
)


def ship(
    workdir: str, out: str, step: int = -1, tokenizer: str = ''
) -> tuple[int, int]:
  """Writes the params-only checkpoint and tokenizer; (step, parameters)."""
  step_dir, step = checkpoint_params.resolve_step(workdir, step)
  src = paths.path(step_dir) / checkpoint_params.STATE_ITEM
  meta = ocp.PyTreeCheckpointer().metadata(src)
  tree = meta.item_metadata.tree if hasattr(meta, 'item_metadata') else meta
  item = {'params': tree['params']}
  restored = ocp.PyTreeCheckpointer().restore(
      src,
      args=ocp.args.PyTreeRestore(
          item=item,
          restore_args=ocp.checkpoint_utils.construct_restore_args(item),
          partial_restore=True,
      ),
  )
  params = {'params': restored['params']}
  dest = os.path.join(out, 'checkpoints', str(step), 'state')
  if os.path.exists(os.path.join(out, 'checkpoints')):
    shutil.rmtree(os.path.join(out, 'checkpoints'))
  ocp.PyTreeCheckpointer().save(os.path.abspath(dest), params)
  tok = os.path.join(out, 'tokenizer')
  if os.path.exists(tok):
    shutil.rmtree(tok)
  shutil.copytree(tokenizer or os.path.join(workdir, 'tokenizer'), tok)
  import jax  # pylint: disable=g-import-not-at-top

  n = sum(int(np.size(x)) for x in jax.tree.leaves(params))
  return step, n


def main(argv):
  del argv
  step, n = ship(_WORKDIR.value, _OUT.value, _STEP.value, _TOKENIZER.value)
  extra = {}
  if _MANIFEST.value:
    with open(_MANIFEST.value, encoding='utf-8') as f:
      extra = json.load(f)
  manifest = {
      **extra,
      'step': step,
      'parameters': n,
      'sha256': digests.tree_sha256(_OUT.value, skip=('MANIFEST.json',)),
  }
  with open(os.path.join(_OUT.value, 'MANIFEST.json'), 'w') as f:
    json.dump(manifest, f, indent=1)
    f.write('\n')
  print(json.dumps({'step': step, 'parameters': n}))


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir', 'out'])
  app.run(main)
