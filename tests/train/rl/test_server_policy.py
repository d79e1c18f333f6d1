"""The RL run sampling through a real rollout server process (tiny)."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import httpx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

TOKENIZER = rl_run.REPO / 'tests' / 'agent' / 'golden' / 'tiny_tokenizer'


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _start_server(port: int, log) -> subprocess.Popen:
  env = dict(os.environ, XLA_FLAGS='--xla_force_host_platform_device_count=1')
  return subprocess.Popen(
      [sys.executable, '-m', 'search_agent.serving',
       '--config=tpu_configs/serve.py:tiny', f'--port={port}',
       f'--config.tokenizer={TOKENIZER}'],
      cwd=rl_run.REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
  )  # fmt: skip


def _wait_healthy(url: str, proc, timeout_s: float = 300) -> None:
  t0 = time.monotonic()
  while time.monotonic() - t0 < timeout_s:
    assert proc.poll() is None, 'the rollout server exited'
    try:
      if httpx.get(url + '/health').status_code == 200:
        return
    except httpx.TransportError:
      pass
    time.sleep(0.5)
  raise TimeoutError(f'{url} not healthy after {timeout_s}s')


def test_rollouts_through_a_server_with_weights_pushed(tmp_path):
  port = _free_port()
  url = f'http://127.0.0.1:{port}'
  slog = open(tmp_path / 'server.txt', 'wb')  # pylint: disable=consider-using-with
  server = _start_server(port, slog)
  try:
    _wait_healthy(url, server)
    workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
    proc = rl_run.start(
        workdir,
        '--config.max_updates=2',
        '--config.rollout.policy=server',
        f"--config.rollout.server_urls=('{url}',)",
        f'--config.tokenizer.path={TOKENIZER}',
        log=log,
    )
    assert proc.wait(timeout=900) == 0, rl_run.log_tail(log)
    recs = rl_run.metrics(workdir)
    assert [r['policy_version'] for r in recs] == [1, 2]
    # Step 0: the server's sampling logprobs match the learner's recompute
    # (same version-0 weights, pushed by the worker), routing replayed.
    parity = json.loads((workdir / 'parity.json').read_text())
    assert parity['ok'] and parity['max_abs_logprob_diff'] < 0.01, parity
    assert parity['routing_nonzero_entries'] > 0
    # Every kept rollout is token-exact and stamped with the server's
    # versions; the server was moved on to what the learner published.
    rollouts = [
        json.loads(l)
        for l in (workdir / 'rollouts-w0.jsonl').read_text().splitlines()
    ]
    assert rollouts
    seen = set()
    for r in rollouts:
      tok = r['tokens']
      gen = [v for v, m in zip(tok['versions'], tok['loss_mask']) if m]
      assert gen and all(v >= 0 for v in gen)
      seen.update(gen)
    served = httpx.get(url + '/health').json()['version']
    assert seen <= {0, 1} and served == max(seen)
    stats = httpx.get(url + '/metrics').json()
    assert stats['requests'] > 0 and stats['weight_updates'] >= 1
  finally:
    server.terminate()
    server.wait(timeout=30)
    slog.close()
