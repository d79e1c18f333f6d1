r"""Serves a search index over HTTP (FastAPI + uvicorn).

  python -m index.serve --config=tpu_configs/search/serve.py:tiny \
      --workdir=/tmp/serve

Endpoints: POST /search, POST /documents, GET /health (see
search_agent/search/service.py); clients: search_agent.search.client.
"""

from absl import app
from absl import flags
from ml_collections import config_flags
import uvicorn

from search_agent.search import service
from search_agent.search.engine import SearchEngine

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Serve config (tpu_configs/search/serve.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'Holds the index (<workdir>/index) unless index_dir.'
)
flags.mark_flags_as_required(['config', 'workdir'])


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
  engine = service.open_engine(c, _WORKDIR.value)
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
