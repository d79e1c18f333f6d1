r"""Builds the search views of a corpus: a tantivy index or OpenSearch indices.

  python -m index.build --config=tpu_configs/search/build.py:tiny \
      --workdir=/tmp/idx

writes /tmp/idx/index/ (doc and passage views, doc_ids.txt, manifest.json).
With --config.backend=opensearch the views go to the cluster of the config's
`opensearch` section (indices <prefix>-doc and <prefix>-passage) and
/tmp/idx/index/ holds the same manifest.json.
"""

import json
import pathlib

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags

from search_agent import paths
from search_agent.search.builder import build_index

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Build config (tpu_configs/search/build.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string(
    'workdir',
    None,
    'Output dir; the index (or manifest) goes to <workdir>/index.',
)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  del argv
  # The index files are written with local file IO (tantivy, manifest.json):
  # a gs:// workdir is refused with a clear error instead of becoming gs:/.
  workdir = paths.require_local(_WORKDIR.value, 'index.build --workdir')
  index_dir = pathlib.Path(workdir) / 'index'
  manifest = build_index(_CONFIG.value, index_dir)
  logging.info('built %s: %s', index_dir, json.dumps(manifest.counts))
  print(
      f'{manifest.backend} index {index_dir}: {manifest.counts} in'
      f' {manifest.build_seconds} s ({manifest.docs_per_second} docs/s);'
      f' sha256 {manifest.content_sha256[:16]}...'
  )


if __name__ == '__main__':
  app.run(main)
