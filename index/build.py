r"""Builds a tantivy search index from a corpus.

  python -m index.build --config=tpu_configs/search/build.py:tiny \
      --workdir=/tmp/idx

writes /tmp/idx/index/ (doc and passage views, doc_ids.txt, manifest.json).
"""

import json
import pathlib

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags

from search_agent.corpus.sources import CorpusSpec
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.tantivy_build import build_tantivy_index

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Build config (tpu_configs/search/build.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'Output dir; the index goes to <workdir>/index.'
)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  del argv
  c = _CONFIG.value
  index_dir = pathlib.Path(_WORKDIR.value) / 'index'
  manifest = build_tantivy_index(
      CorpusSpec(**c.corpus),
      index_dir,
      IndexBuildConfig(**c.index),
      heap_bytes=c.writer.heap_mb * 1_000_000,
      threads_per_view=c.writer.threads_per_view,
      progress=c.progress,
  )
  logging.info('built %s: %s', index_dir, json.dumps(manifest.counts))
  print(
      f'index {index_dir}: {manifest.counts} in {manifest.build_seconds} s'
      f' ({manifest.docs_per_second} docs/s); sha256'
      f' {manifest.content_sha256[:16]}...'
  )


if __name__ == '__main__':
  app.run(main)
