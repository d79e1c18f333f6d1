"""launch/opensearch.sh: start, idempotent start, status, stop, clear errors.

Starts a second, small node on a free port with its home in tmp_path (the
jar is the one `launch/run_tests.sh` already built).
"""

import os
import socket
import subprocess
import time

import pytest

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _run(repo_root, command, **env):
  return subprocess.run(
      ['bash', str(repo_root / 'launch' / 'opensearch.sh'), command],
      env={**os.environ, **env},
      capture_output=True,
      text=True,
      timeout=180,
      check=False,
  )


def test_start_is_idempotent_and_stop_stops(repo_root, tmp_path):
  port = str(_free_port())
  env = dict(
      OPENSEARCH_PORT=port,
      OPENSEARCH_HOME=str(tmp_path / 'node'),
      OPENSEARCH_JAVA_OPTS='-Xms256m -Xmx512m',
  )
  try:
    first = _run(repo_root, 'start', **env)
    assert first.returncode == 0, first.stderr + first.stdout
    assert f'http://127.0.0.1:{port}' in first.stdout
    assert (tmp_path / 'node' / 'node.pid').is_file()
    again = _run(repo_root, 'start', **env)
    assert again.returncode == 0
    assert 'already running' in again.stdout
    assert _run(repo_root, 'status', **env).returncode == 0
  finally:
    stopped = _run(repo_root, 'stop', **env)
  assert stopped.returncode == 0, stopped.stderr
  assert 'stopped' in stopped.stdout
  assert not (tmp_path / 'node' / 'node.pid').exists()
  assert _run(repo_root, 'status', **env).returncode == 1
  assert 'not running' in _run(repo_root, 'stop', **env).stdout


def test_node_stops_with_the_process_it_was_tied_to(repo_root, tmp_path):
  parent = subprocess.Popen(['sleep', '300'])
  env = dict(
      OPENSEARCH_PORT=str(_free_port()),
      OPENSEARCH_HOME=str(tmp_path / 'node'),
      OPENSEARCH_JAVA_OPTS='-Xms256m -Xmx512m',
      OPENSEARCH_STOP_WITH_PID=str(parent.pid),
  )
  try:
    started = _run(repo_root, 'start', **env)
    assert started.returncode == 0, started.stderr + started.stdout
    assert f'stops with pid {parent.pid}' in started.stdout
  finally:
    parent.kill()
    parent.wait()
  deadline = time.monotonic() + 60
  while _run(repo_root, 'status', **env).returncode == 0:
    assert time.monotonic() < deadline, 'the node outlived its parent'
    time.sleep(1)
  log = (tmp_path / 'node' / 'node.log').read_text()
  assert f'process {parent.pid} ended; stopping the node' in log
  _run(repo_root, 'stop', **env)


def test_cluster_started_elsewhere_is_used_and_left_alone(
    repo_root, tmp_path, opensearch_url
):
  env = dict(
      OPENSEARCH_PORT=opensearch_url.rsplit(':', 1)[1],
      OPENSEARCH_HOME=str(tmp_path),
  )
  result = _run(repo_root, 'start', **env)
  assert result.returncode == 0, result.stderr
  assert 'not started from this checkout already answers' in result.stdout
  assert 'not running' in _run(repo_root, 'stop', **env).stdout
  assert _run(repo_root, 'status', **env).returncode == 1


def test_bad_java_and_bad_command_fail_clearly(repo_root, tmp_path):
  result = _run(
      repo_root,
      'start',
      JAVA_HOME=str(tmp_path / 'no-jdk'),
      OPENSEARCH_HOME=str(tmp_path),
  )
  assert result.returncode == 1
  assert 'install Java 17+ or set JAVA_HOME' in result.stderr
  result = _run(repo_root, 'restart')
  assert result.returncode == 1
  assert 'usage: bash launch/opensearch.sh start|stop|status' in result.stderr
