"""Pulse test of `python -m index.serve`: build the tiny index, serve it over
HTTP, answer a search and a document fetch, stop on SIGTERM."""

import asyncio
import signal
import subprocess
import sys
import time

import portpicker
import pytest

from search_agent.search import client
from search_agent.search import service
from tpu_configs.search import serve as serve_config


async def _wait_and_query(url: str, proc: subprocess.Popen):
  http = client.HttpSearch(url, timeout_s=5)
  try:
    deadline = time.monotonic() + 90
    while True:
      try:
        (found,) = await http.search(['Lothair II'], 3)
        break
      except client.SearchServiceError:
        if proc.poll() is not None or time.monotonic() > deadline:
          raise
        await asyncio.sleep(0.2)
    docs = await http.get_documents([found.hits[0].doc_id])
    return found, docs
  finally:
    await http.aclose()


def test_serve_binary_pulse(tmp_path, repo_root):
  port = portpicker.pick_unused_port()
  proc = subprocess.Popen(
      [
          sys.executable, '-m', 'index.serve',
          '--config=tpu_configs/search/serve.py:tiny',
          f'--workdir={tmp_path}', f'--config.port={port}',
      ],
      cwd=repo_root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True,
  )  # fmt: skip
  try:
    found, (doc,) = asyncio.run(
        _wait_and_query(f'http://127.0.0.1:{port}', proc)
    )
  finally:
    proc.terminate()
    out, err = proc.communicate(timeout=30)
  assert found.error is None and found.hits[0].doc_id == 'Lothair_II'
  assert doc.title == 'Lothair II'
  assert f'serving 500 documents (tantivy) at http://127.0.0.1:{port}' in out
  # uvicorn shuts down gracefully, then re-raises SIGTERM to exit with it.
  assert proc.returncode in (0, -signal.SIGTERM), err[-2000:]
  assert (tmp_path / 'index' / 'manifest.json').is_file()


def test_unknown_backend_and_variant_are_rejected(tmp_path):
  c = serve_config.get_config()
  c.backend = 'solr'
  with pytest.raises(ValueError, match='tantivy'):
    service.open_engine(c, tmp_path)
  with pytest.raises(ValueError, match='unknown variant'):
    serve_config.get_config('huge')
