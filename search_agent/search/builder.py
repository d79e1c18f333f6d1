"""Builds the search views a build config names (tantivy, Lucene, OpenSearch).

The library behind `python -m index.build`; tests and other binaries call it
without defining the binary's flags.
"""

import pathlib

from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.sources import CorpusSpec
from search_agent.search import es_backend
from search_agent.search import locations
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.es_build import build_es_from_spec
from search_agent.search.lucene_index import build_lucene_index
from search_agent.search.tantivy_build import build_tantivy_index

BACKENDS = ('tantivy', 'lucene', 'opensearch')


def build_index(c, index_dir: pathlib.Path) -> BuildManifest:
  """Builds the views `c.backend` names from `c.corpus` into `index_dir`.

  Raises:
    ValueError: for a backend not in `BACKENDS`.
  """
  spec, views = CorpusSpec(**c.corpus), IndexBuildConfig(**c.index)
  if c.backend != 'opensearch':  # a local index: the directory is it
    (pathlib.Path(index_dir) / locations.LOCATION_FILE).unlink(missing_ok=True)
  if c.backend == 'tantivy':
    return build_tantivy_index(
        spec,
        index_dir,
        views,
        heap_bytes=c.writer.heap_mb * 1_000_000,
        threads_per_view=c.writer.threads_per_view,
        progress=c.progress,
    )
  if c.backend == 'lucene':
    return build_lucene_index(
        spec,
        index_dir,
        views,
        ram_buffer_mb=c.writer.heap_mb,
        progress=c.progress,
    )
  if c.backend == 'opensearch':
    config = es_backend.es_index_config(c.opensearch)
    manifest = build_es_from_spec(
        spec,
        config,
        views,
        manifest_dir=index_dir,
        overwrite=c.overwrite,
        progress=c.progress,
    )
    # index_dir now stands for the cluster's indices (locations.py).
    locations.write(index_dir, locations.of_config(config))
    return manifest
  raise ValueError(f'backend must be one of {BACKENDS}, got {c.backend!r}')
