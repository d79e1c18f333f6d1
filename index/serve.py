r"""Serves a search index over HTTP (FastAPI + uvicorn).

  python -m index.serve --config=tpu_configs/search/serve.py:tiny \
      --workdir=/tmp/serve

Endpoints: POST /search, POST /documents, GET /health (see
search_agent/search/service.py); clients: search_agent.search.client.
"""

import pathlib

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags
import uvicorn

from search_agent.corpus.sources import CorpusSpec
from search_agent.search import es_backend
from search_agent.search import service
from search_agent.search import tantivy_index
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import GuardConfig
from search_agent.search.guard import LeakageGuard
from search_agent.search.snippets import SnippetConfig
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Serve config (tpu_configs/search/serve.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'Holds the index (<workdir>/index) unless index_dir.'
)
flags.mark_flags_as_required(['config', 'workdir'])


def engine_config(c) -> EngineConfig:
  """EngineConfig from the `engine` section."""
  e = c.engine
  return EngineConfig(
      rrf_k=e.rrf_k,
      weights=dict(e.weights),
      depth_factor=e.depth_factor,
      min_depth=e.min_depth,
      max_k=e.max_k,
      max_query_chars=e.max_query_chars,
      snippet=SnippetConfig(
          window_words=e.snippet_window_words, max_words=e.snippet_max_words
      ),
  )


def open_engine(c, workdir: str | pathlib.Path) -> SearchEngine:
  """Opens (building it first if configured and missing) the engine.

  Raises:
    BackendError: if there is no usable index.
    ValueError: for an unknown backend.
  """
  guard = LeakageGuard(GuardConfig(blocked_patterns=tuple(c.blocked_patterns)))
  if c.backend == 'tantivy':
    index_dir = pathlib.Path(c.index_dir or pathlib.Path(workdir) / 'index')
    built = (index_dir / tantivy_index.CONFIG_FILE).is_file()
    if not built and c.build_if_missing:
      logging.info('building %s from %s', index_dir, c.corpus.kind)
      build_tantivy_index(
          CorpusSpec(**c.corpus), index_dir, IndexBuildConfig(**c.build)
      )
    return tantivy_engine(
        index_dir, engine_config(c), guard, threads=c.backend_threads
    )
  if c.backend == 'opensearch':
    backend = es_backend.EsBackend(es_backend.es_index_config(c.opensearch))
    build = backend.build_config
    analyzer = QueryAnalyzer(
        stem=build.stem, remove_stopwords=build.remove_stopwords
    )
    return SearchEngine(backend, engine_config(c), guard, analyzer=analyzer)
  raise ValueError(
      f"backend must be 'tantivy' or 'opensearch', got {c.backend!r}"
  )


def make_server(engine: SearchEngine, c) -> uvicorn.Server:
  """The uvicorn server of the service app over `engine`."""
  limits = service.ServiceLimits(**c.limits)
  config = uvicorn.Config(
      service.create_app(engine, limits),
      host=c.host,
      port=c.port,
      log_level=c.log_level,
  )
  return uvicorn.Server(config)


def main(argv):
  del argv
  c = _CONFIG.value
  engine = open_engine(c, _WORKDIR.value)
  try:
    print(
        f'serving {engine.num_documents()} documents ({c.backend}) at'
        f' http://{c.host}:{c.port}',
        flush=True,
    )
    make_server(engine, c).run()
  finally:
    engine.close()


if __name__ == '__main__':
  app.run(main)
