r"""The rollout server: continuous batching, token-exact API, weight updates.

  python -m search_agent.serving --config=tpu_configs/serve.py:tiny \
      --port=8000

Endpoints: search_agent/serving/app.py (token level, control) and
openai_api.py (OpenAI-compatible); clients: search_agent/llm/server_client.py
(token-exact) and llm/openai_client.py.

One server spans one host's devices: started as several processes of one
program (a multi-host slice, `launch.local --processes=N`) it refuses with
a clear error; run one server per host instead (docs/pods.md).
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent import distributed
from search_agent.serving import app as app_lib
from search_agent.serving import build

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Serve config (tpu_configs/serve.py).', lock_config=True
)
_PORT = flags.DEFINE_integer('port', None, 'Port (default: config.port).')
flags.mark_flags_as_required(['config'])


def main(argv):
  del argv
  distributed.initialize()
  try:
    distributed.require_one_process('the rollout server')
  except distributed.DistributedError as e:
    raise SystemExit(f'serving: {e}') from None
  c = _CONFIG.value
  served = build.build(c)
  port = _PORT.value or c.port
  try:
    server = app_lib.make_server(
        served, host=c.host, port=port, log_level=c.log_level,
        max_body_bytes=c.max_body_bytes,
    )  # fmt: skip
    print(
        f'serving {c.model.preset} ({c.engine.slots} slots, version'
        f' {served.engine.version}) at http://{c.host}:{port}',
        flush=True,
    )
    server.run()
  finally:
    served.engine.close()


if __name__ == '__main__':
  app.run(main)
