"""Servers a run starts as its children (search_agent/serving/local.py)."""

import os
import subprocess
import sys

import pytest

from search_agent.serving import local


def test_a_tied_child_runs_its_module_only_while_its_parent_lives():
  run = lambda parent: subprocess.run(
      [sys.executable, '-m', 'search_agent.serving.tied_child', parent,
       'platform'],
      capture_output=True, text=True, check=False, timeout=60,
  )  # fmt: skip
  ran = run(str(os.getpid()))
  assert ran.returncode == 0 and ran.stdout.strip(), ran.stderr
  gone = run('1')  # not its parent: as if the parent died before prctl
  assert gone.returncode != 0 and 'parent 1 already gone' in gone.stderr


def test_the_server_command_is_tied_to_this_process():
  spec = local.ServerSpec(
      config='tpu_configs/serve.py:tiny',
      overrides={'engine.slots': '3', 'tokenizer': '/t'},
      log='',
  )
  argv = local.serve_argv(spec, 4321)
  assert argv[1:6] == [
      '-m', 'search_agent.serving.tied_child', str(os.getpid()),
      'search_agent.serving', '--config=tpu_configs/serve.py:tiny',
  ]  # fmt: skip
  assert argv[6:] == [
      '--config.engine.slots=3', '--config.tokenizer=/t', '--port=4321',
  ]  # fmt: skip


def test_a_server_that_exits_stops_the_start_with_its_log(tmp_path):
  """A child that dies before /health answers: LocalServerError quoting the
  end of its log, and nothing left running."""
  spec = local.ServerSpec(
      config='tpu_configs/serve.py:no_such_variant',
      overrides={},
      log=str(tmp_path / 'servers' / 'server-0.log'),
  )
  env = local.env_pairs(('JAX_PLATFORMS=cpu',), 'env')
  with pytest.raises(local.LocalServerError) as e:
    with local.started([spec], env, timeout_s=300):
      pytest.fail('the block must not run')
  assert 'exited with' in str(e.value)
  assert 'no_such_variant' in str(e.value)  # the log's end, quoted


def test_malformed_environment_entries_are_refused_by_name():
  assert local.env_pairs(('A=1', ' B = x=y '), 'served.env')['B'] == 'x=y'
  with pytest.raises(ValueError, match="served.env entry 'XLA' is not"):
    local.env_pairs(('XLA',), 'served.env')


def test_a_child_server_never_joins_its_parents_program(monkeypatch):
  """Started from one process of a multi-process learner, a server is its
  own one-host program: the coordinator variables stay behind."""
  monkeypatch.setenv('JAX_COORDINATOR_ADDRESS', '127.0.0.1:1234')
  monkeypatch.setenv('TPU_WORKER_HOSTNAMES', '127.0.0.1,127.0.0.1')
  env = local.env_pairs(('JAX_PLATFORMS=cpu',), 'env')
  assert 'JAX_COORDINATOR_ADDRESS' not in env
  assert 'TPU_WORKER_HOSTNAMES' not in env
  assert env['JAX_PLATFORMS'] == 'cpu'
