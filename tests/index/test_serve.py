"""Pulse test of `index.serve`: build the tiny index, serve it, 2 requests."""

import asyncio
import threading
import time

import portpicker
import pytest

from index import serve
from search_agent.search import client
from search_agent.search import service
from tpu_configs.search import serve as serve_config


def test_serve_pulse(tmp_path):
  c = serve_config.get_config('tiny')
  c.port = portpicker.pick_unused_port()
  engine = service.open_engine(c, tmp_path)  # builds 500 documents
  assert (tmp_path / 'index' / 'manifest.json').is_file()
  server = serve.make_server(engine, c)
  thread = threading.Thread(target=server.run, daemon=True)
  thread.start()
  try:
    deadline = time.monotonic() + 30
    while not server.started:
      assert time.monotonic() < deadline, 'server did not start in 30 s'
      time.sleep(0.05)

    async def two_steps():
      http = client.HttpSearch(f'http://127.0.0.1:{c.port}')
      try:
        (found,) = await http.search(['Lothair II'], 3)
        docs = await http.get_documents([found.hits[0].doc_id])
        return found, docs
      finally:
        await http.aclose()

    found, (doc,) = asyncio.run(two_steps())
    assert found.error is None and found.hits[0].doc_id == 'Lothair_II'
    assert doc.title == 'Lothair II'
  finally:
    server.should_exit = True
    thread.join(timeout=10)
    engine.close()
  assert not thread.is_alive()


def test_unknown_backend_and_variant_are_rejected(tmp_path):
  c = serve_config.get_config()
  c.backend = 'solr'
  with pytest.raises(ValueError, match='tantivy'):
    service.open_engine(c, tmp_path)
  with pytest.raises(ValueError, match='unknown variant'):
    serve_config.get_config('huge')
