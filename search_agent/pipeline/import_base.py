r"""Imports a shipped base model into a pipeline run, checking its hashes.

  python -m search_agent.pipeline.import_base --base=DIR --part=tokenizer \
      --workdir=RUN/tokenizer
  python -m search_agent.pipeline.import_base --base=DIR --part=params \
      --workdir=RUN/pretrain

The pipeline's tokenizer and pretrain stages when `base.path` is set: the
base's files are checked against its manifest (base_model.verify), then the
tokenizer is copied, or the parameters written as a trainer checkpoint that
SFT starts from and the evaluation before SFT scores.
"""

import os

from absl import app
from absl import flags

from search_agent import digests
from search_agent.pipeline import base_model

_BASE = flags.DEFINE_string('base', None, 'The base directory.')
_PART = flags.DEFINE_enum(
    'part', None, ['tokenizer', 'params'], 'What to import.'
)
_SHA = flags.DEFINE_string(
    'manifest_sha256', '', "The manifest's sha256, as the plan read it."
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'The stage workdir.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  sha = digests.file_sha256(os.path.join(_BASE.value, base_model.MANIFEST_FILE))
  if _SHA.value and sha != _SHA.value:
    raise base_model.BaseModelError(
        f'{_BASE.value}/{base_model.MANIFEST_FILE} changed since the'
        ' pipeline was planned: run it again'
    )
  if _PART.value == 'tokenizer':
    m = base_model.install_tokenizer(_BASE.value, _WORKDIR.value)
  else:
    m = base_model.install_params(_BASE.value, _WORKDIR.value)
  print(
      f'imported base {_BASE.value} ({_PART.value}): step {m.get("step")},'
      f' {m["parameters"]:,} parameters, params_sha256'
      f' {m["params_sha256"][:12]}, files match the manifest'
  )


if __name__ == '__main__':
  flags.mark_flags_as_required(['base', 'part', 'workdir'])
  app.run(main)
