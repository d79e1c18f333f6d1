"""A real rollout server (tiny MoE on CPU) on a free port, for the module."""

import os

_FLAG = '--xla_cpu_enable_concurrency_optimized_scheduler=false'
if _FLAG not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = (
      os.environ.get('XLA_FLAGS', '') + ' ' + _FLAG
  ).strip()

import socket
import threading
import time

import httpx
import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search.tantivy_build import build_tantivy_index
from search_agent.serving import app as app_lib
from search_agent.serving import build
from tpu_configs import serve as serve_config

ENGINE = dict(
    slots=4, max_context=1792, max_new_tokens=32, max_chunk=64,
    prefill_min_tokens=64, steps_per_call=4, max_queue=6, retry_after_s=1.0,
)  # fmt: skip


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def tiny_config():
  c = serve_config.get_config('tiny')
  c.engine.update(ENGINE)
  return c


@pytest.fixture(scope='package')
def server():
  """(base_url, Served) of a server running in this process."""
  served = build.build(tiny_config())
  port = free_port()
  srv = app_lib.make_server(served, host='127.0.0.1', port=port)
  thread = threading.Thread(target=srv.run, daemon=True)
  thread.start()
  url = f'http://127.0.0.1:{port}'
  for _ in range(200):
    try:
      if httpx.get(url + '/health').status_code == 200:
        break
    except httpx.TransportError:
      time.sleep(0.05)
  yield url, served
  srv.should_exit = True
  thread.join(timeout=10)
  served.engine.close()


@pytest.fixture(scope='package')
def tiny_index(tmp_path_factory):
  """The first 500 bundled 2Wiki documents, indexed (~1 s)."""
  path = tmp_path_factory.mktemp('serving_index') / 'index'
  build_tantivy_index(CorpusSpec(max_docs=500), path)
  return path
