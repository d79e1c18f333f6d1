r"""Serves a search index over HTTP (FastAPI + uvicorn).

  python -m index.serve --config=tpu_configs/search/serve.py:tiny \
      --workdir=/tmp/serve

Endpoints: POST /search, POST /documents, GET /health (see
search_agent/search/service.py); clients: search_agent/search/client.py.
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.search import service

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Serve config (tpu_configs/search/serve.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string(
    'workdir', None, 'Holds the index (<workdir>/index) unless index_dir.'
)
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  del argv
  c = _CONFIG.value
  engine = service.open_engine(c, _WORKDIR.value)
  try:
    server = service.make_server(
        engine,
        service.ServiceLimits(**c.limits),
        host=c.host,
        port=c.port,
        log_level=c.log_level,
    )
    print(
        f'serving {engine.num_documents()} documents ({c.backend}) at'
        f' http://{c.host}:{c.port}',
        flush=True,
    )
    server.run()
  finally:
    engine.close()


if __name__ == '__main__':
  app.run(main)
