"""The RL run sampling through a real rollout server process (tiny)."""

import asyncio
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import httpx
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol
from search_agent.llm import server_client
from search_agent.train.rl import partial
from search_agent.train.rl import server_policy
from search_agent.train.rl import weight_sync

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

TOKENIZER = rl_run.REPO / 'tests' / 'chat' / 'golden' / 'tiny_tokenizer'


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


@pytest.fixture(scope='module')
def server(tmp_path_factory):
  """(url) of a tiny rollout server process with the tiny test tokenizer."""
  port = _free_port()
  url = f'http://127.0.0.1:{port}'
  path = tmp_path_factory.mktemp('server') / 'server.txt'
  with open(path, 'wb') as slog:
    proc = _start_server(port, slog)
    try:
      _wait_healthy(url, proc)
      yield url
    finally:
      proc.terminate()
      proc.wait(timeout=30)


def test_request_aborted_by_the_interrupt_and_resent(server, tmp_path):
  """Iris on the real server: /abort mid-request, partial output dropped."""
  tok = tokenizer_lib.load_tokenizer(TOKENIZER)
  llm = server_policy.RoutedServerLLM(
      server_client.ServerConfig(base_urls=(server,), routed_experts=True),
      chat_prompts.RendererPrompts(tok),
  )
  msgs = [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'Q'}]

  def metrics():
    return httpx.get(server + '/metrics').json()

  async def attempt(workdir, seed):
    """(policy, completion), or None when it finished before the pause."""
    store = weight_sync.WeightStore(workdir / 'weights')
    store.publish({'w': jnp.zeros(2)}, 0)
    gate = partial.InterruptGate(str(workdir), store, poll_s=0.02)
    policy = partial.PartialPolicy(
        llm, gate, abort=server_policy.abort_fn((server,))
    )
    params = protocol.SamplingParams(temperature=1.0, max_tokens=250, seed=seed)
    before = metrics()['generated_tokens']
    call = asyncio.create_task(policy.chat(msgs, params))
    t0 = time.monotonic()
    while metrics()['generated_tokens'] == before:  # not decoding yet
      assert time.monotonic() - t0 < 120
      await asyncio.sleep(0.01)
    httpx.post(server + '/pause')  # keep it in flight (aborts still run)
    if call.done() or not metrics()['slots_busy']:  # it won the race
      httpx.post(server + '/resume')
      await call
      return None
    partial.write_interrupt(str(workdir), 1)  # the update has its groups
    await asyncio.sleep(1.0)
    httpx.post(server + '/resume')
    await asyncio.sleep(0.5)
    assert not call.done()  # aborted, held until version 1
    store.publish({'w': jnp.ones(2)}, 1)
    return policy, (await call)[0]

  for seed in range(3, 8):  # a loaded machine may finish 250 tokens first
    workdir = tmp_path / f'seed{seed}'
    workdir.mkdir()
    if got := asyncio.run(attempt(workdir, seed)):
      break
  else:
    pytest.fail('every request finished before the server paused')
  policy, c = got
  assert policy.interruptions >= 1 and policy.dropped_tokens > 0
  assert c.finish_reason in ('stop', 'length') and c.token_ids
  rec = policy.record()  # the committed prefix: prompt + the resent reply
  assert rec.token_ids == c.prompt_token_ids + c.token_ids
  assert np.asarray(c.routed_experts).shape[0] == len(rec.token_ids) - 1


def test_rollouts_through_a_server_with_weights_pushed(server, tmp_path):
  url = server
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
  # The worker pushes the newest published weights before its next request:
  # the server serves at least every version a kept rollout used, and moved
  # on past 0 once the learner published. Under load both updates may train
  # on version-0 groups (age 1 is within the limit) while the first request
  # at version 1 is still in flight when the run ends.
  assert seen <= {0, 1}
  assert max(seen) <= served <= recs[-1]['policy_version'] and served >= 1
  stats = httpx.get(url + '/metrics').json()
  assert stats['requests'] > 0 and stats['weight_updates'] >= 1
