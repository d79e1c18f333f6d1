"""The server's launch config: the xpk command and a pulse of the binary."""

import pathlib
import subprocess
import sys
import time

import httpx
import pytest

from tests.serving import conftest

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_xpk_dry_run_command():
  out = subprocess.run(
      [sys.executable, '-m', 'launch.xpk',
       '--config=tpu_configs/launch/serve.py', '--dry_run'],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
  )  # fmt: skip
  cmd = out.stdout.strip()
  assert '--tpu-type=v5p-8' in cmd and '--workload=rollout-server-0' in cmd
  assert (
      "'--command=python -m search_agent.serving --config=tpu_configs/serve.py"
      " --port=8000'" in cmd
  )


@pytest.mark.maxtext
@pytest.mark.slow
def test_binary_serves_and_exits_on_sigterm(tmp_path):
  port = conftest.free_port()
  proc = subprocess.Popen(
      [sys.executable, '-m', 'search_agent.serving',
       '--config=tpu_configs/serve.py:tiny', f'--port={port}',
       '--config.engine.slots=2', '--config.engine.max_context=512',
       '--config.engine.max_new_tokens=16', '--config.engine.max_chunk=64'],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
  )  # fmt: skip
  try:
    url = f'http://127.0.0.1:{port}'
    for _ in range(600):
      try:
        if httpx.get(url + '/health').status_code == 200:
          break
      except httpx.TransportError:
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        time.sleep(0.2)
    r = httpx.post(
        url + '/generate',
        json={'input_ids': [1, 2, 3], 'sampling': {'max_new_tokens': 4}},
        timeout=120,
    )
    assert r.status_code == 200 and len(r.json()['token_ids']) == 4
  finally:
    proc.terminate()
    proc.wait(timeout=60)
