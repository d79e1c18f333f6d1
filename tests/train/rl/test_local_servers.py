"""Rollout servers started by the RL run itself (train/rl/local_servers.py)."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import httpx
import pytest

from search_agent.train.rl import job as job_lib
from search_agent.train.rl import local_servers
from tpu_configs import rl as rl_config

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

TOKENIZER = rl_run.REPO / 'tests' / 'chat' / 'golden' / 'tiny_tokenizer'
LOCAL = (
    '--config.rollout.policy=server',
    '--config.rollout.local_servers.count=1',
    f'--config.tokenizer.path={TOKENIZER}',
)


def _tiny(**rollout):
  c = rl_config.get_config('tiny')
  c.rollout.update(rollout)
  return c


def _overrides(argv) -> dict[str, str]:
  return dict(
      a[len('--config.') :].split('=', 1)
      for a in argv
      if a.startswith('--config.')
  )


def test_only_a_server_policy_without_urls_starts_servers():
  assert local_servers.wanted(_tiny()) == 0  # in_process
  c = _tiny(policy='server')
  assert local_servers.wanted(c) == 0  # count 0
  c.rollout.local_servers.count = 2
  assert local_servers.wanted(c) == 2
  c.rollout.server_urls = ('http://h:1',)
  assert local_servers.wanted(c) == 0  # servers elsewhere


def test_the_server_gets_the_runs_tokenizer_sizes_and_slots():
  c = _tiny(policy='server', max_groups=3)
  c.model.dims.base_num_decoder_layers = 4
  argv = local_servers.serve_argv(c, 1234, '/t/tokenizer.json')
  assert argv[1:6] == [
      '-m', 'search_agent.serving.tied_child', str(os.getpid()),
      'search_agent.serving', '--config=tpu_configs/serve.py:tiny',
  ]  # fmt: skip
  assert argv[-1] == '--port=1234'
  o = _overrides(argv)
  assert o['tokenizer'] == '/t/tokenizer.json'
  assert o['template'] == 'chatml'
  assert o['engine.slots'] == str(3 * c.group_size)
  dims = dict(d.split('=') for d in eval(o['model.dims']))  # pylint: disable=eval-used
  assert dims['base_num_decoder_layers'] == '4'
  assert dims == {k: str(v) for k, v in dict(c.model.dims).items()}
  c.rollout.local_servers.overrides = ('engine.slots=5',)
  assert _overrides(local_servers.serve_argv(c, 1, 't'))['engine.slots'] == '5'


def test_a_malformed_override_or_env_entry_is_refused_by_name():
  c = _tiny(policy='server')
  c.rollout.local_servers.overrides = ('engine.slots',)
  with pytest.raises(job_lib.RLSetupError, match="'engine.slots' is not key"):
    local_servers.serve_argv(c, 1, 't')
  with pytest.raises(job_lib.RLSetupError, match="'XLA_FLAGS' is not NAME"):
    local_servers._env(('XLA_FLAGS',))  # pylint: disable=protected-access


def _server_url(workdir: pathlib.Path, timeout_s: float = 600) -> str:
  """The local server's URL, read from its log name and the run's log."""
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    manifest = workdir / 'manifest.json'
    if manifest.exists():
      urls = json.loads(manifest.read_text())['config']['rollout'][
          'server_urls'
      ]
      if urls:
        return urls[0]
    time.sleep(0.5)
  raise TimeoutError('no manifest with the local server URL')


def _down(url: str, timeout_s: float = 60) -> bool:
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      httpx.get(url + '/health', timeout=2.0)
    except httpx.TransportError:
      return True
    time.sleep(0.5)
  return False


@pytest.mark.maxtext
@pytest.mark.slow
def test_a_run_samples_through_its_server_and_stops_it(tmp_path):
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  proc = rl_run.start(workdir, '--config.max_updates=1', *LOCAL, log=log)
  assert proc.wait(timeout=900) == 0, rl_run.log_tail(log)
  assert [r['policy_version'] for r in rl_run.metrics(workdir)] == [1]
  parity = json.loads((workdir / 'parity.json').read_text())
  assert parity['ok'] and parity['routing_nonzero_entries'] > 0, parity
  served = (workdir / 'servers' / 'server-0.log').read_text()
  assert 'Traceback' not in served
  url = _server_url(workdir, timeout_s=1)
  assert _down(url, timeout_s=5), f'{url} still answers after the run'


@pytest.mark.maxtext
@pytest.mark.slow
def test_sigkill_of_the_run_takes_its_server_down(tmp_path):
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  proc = rl_run.start(workdir, '--config.max_updates=50', *LOCAL, log=log)
  try:
    url = _server_url(workdir)  # written once the server is healthy
    assert httpx.get(url + '/health').status_code == 200
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _down(url), f'{url} outlived its SIGKILLed run'
  finally:
    if proc.poll() is None:
      proc.kill()
