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

from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.sources import CorpusSpec
from search_agent.search import es_backend
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.es_build import build_es_from_spec
from search_agent.search.tantivy_build import build_tantivy_index

BACKENDS = ('tantivy', 'opensearch')

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


def build(c, index_dir: pathlib.Path) -> BuildManifest:
  """Builds the views `c.backend` names from `c.corpus` into `index_dir`.

  Raises:
    ValueError: for a backend other than 'tantivy' and 'opensearch'.
  """
  spec, views = CorpusSpec(**c.corpus), IndexBuildConfig(**c.index)
  if c.backend == 'tantivy':
    return build_tantivy_index(
        spec,
        index_dir,
        views,
        heap_bytes=c.writer.heap_mb * 1_000_000,
        threads_per_view=c.writer.threads_per_view,
        progress=c.progress,
    )
  if c.backend == 'opensearch':
    return build_es_from_spec(
        spec,
        es_backend.es_index_config(c.opensearch),
        views,
        manifest_dir=index_dir,
        overwrite=c.overwrite,
        progress=c.progress,
    )
  raise ValueError(f'backend must be one of {BACKENDS}, got {c.backend!r}')


def main(argv):
  del argv
  index_dir = pathlib.Path(_WORKDIR.value) / 'index'
  manifest = build(_CONFIG.value, index_dir)
  logging.info('built %s: %s', index_dir, json.dumps(manifest.counts))
  print(
      f'{manifest.backend} index {index_dir}: {manifest.counts} in'
      f' {manifest.build_seconds} s ({manifest.docs_per_second} docs/s);'
      f' sha256 {manifest.content_sha256[:16]}...'
  )


if __name__ == '__main__':
  app.run(main)
