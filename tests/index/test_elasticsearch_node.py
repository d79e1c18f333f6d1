"""launch/elasticsearch.sh: a real single-node Elasticsearch 9 starts and stops.

Starts a node on a free port with its home in tmp_path, checks `GET /` and
that an index with the project's analysis settings (pattern tokenizer,
length, stop and porter2 stemmer filters) is accepted and analyzes English
as expected, then stops it.
"""

import json
import os
import pathlib
import socket
import subprocess
import urllib.request

import pytest

from search_agent.search import es_bodies
from search_agent.search.backend import IndexBuildConfig

pytestmark = pytest.mark.slow

_REPO = pathlib.Path(__file__).resolve().parents[2]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
  return subprocess.run(
      ['bash', str(_REPO / 'launch' / 'elasticsearch.sh'), command],
      env={**os.environ, **env},
      capture_output=True,
      text=True,
      timeout=300,
      check=False,
  )


def _call(url: str, method: str = 'GET', body: dict | None = None) -> dict:
  data = None if body is None else json.dumps(body).encode()
  request = urllib.request.Request(
      url,
      data=data,
      method=method,
      headers={'Content-Type': 'application/json'},
  )
  with urllib.request.urlopen(request, timeout=30) as response:
    return json.load(response)


def test_start_serves_elasticsearch_9_and_stop_stops(tmp_path):
  port = _free_port()
  home = tmp_path / 'es'
  env = dict(
      ELASTICSEARCH_PORT=str(port),
      ELASTICSEARCH_HOME=str(home),
      ELASTICSEARCH_JAVA_OPTS='-Xms256m -Xmx512m',
      ELASTICSEARCH_STOP_WITH_PID='',
      CI='',
  )
  url = f'http://127.0.0.1:{port}'
  try:
    started = _run('start', env)
    assert started.returncode == 0, started.stderr + started.stdout
    pid = int((home / 'node.pid').read_text())
    info = _call(url + '/')
    assert info['version']['number'].startswith('9.'), info
    settings = {
        'settings': {
            'number_of_shards': 1,
            'number_of_replicas': 0,
            'analysis': es_bodies.analysis_settings(IndexBuildConfig()),
        }
    }
    assert _call(url + '/views-doc', 'PUT', settings)['acknowledged']
    tokens = _call(
        url + '/views-doc/_analyze',
        'POST',
        {'analyzer': es_bodies.ANALYZER, 'text': 'The runners are running'},
    )['tokens']
    assert [t['token'] for t in tokens] == ['runner', 'run']
  finally:
    stopped = _run('stop', env)
  assert stopped.returncode == 0, stopped.stderr
  assert not (home / 'node.pid').exists()
  assert not pathlib.Path(f'/proc/{pid}').exists()
