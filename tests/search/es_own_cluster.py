"""A test's own Elasticsearch cluster from launch/elasticsearch.sh.

`OwnCluster` starts N nodes (ELASTICSEARCH_NODES=N) on free loopback ports
with their homes under a test's tmp_path, and can kill and restart single
nodes by pid: for tests that must not disturb the cluster other tests share.
"""

import dataclasses
import json
import os
import pathlib
import signal
import socket
import subprocess
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]


def _free(port: int) -> bool:
  with socket.socket() as s:
    try:
      s.bind(('127.0.0.1', port))
    except OSError:
      return False
  return True


def free_port_block(n: int, gap: int = 200) -> int:
  """A port p with p..p+n-1 and p+gap..p+gap+n-1 free (HTTP, transport)."""
  for _ in range(100):
    with socket.socket() as s:
      s.bind(('127.0.0.1', 0))
      base = s.getsockname()[1]
    if base + gap + n >= 65535:
      continue
    ports = [base + i for i in range(n)] + [base + gap + i for i in range(n)]
    if all(_free(p) for p in ports):
      return base
  raise RuntimeError(f'no block of {n} free ports found')


def get_json(url: str, timeout: float = 30.0):
  with urllib.request.urlopen(url, timeout=timeout) as response:
    return json.load(response)


@dataclasses.dataclass
class OwnCluster:
  """N nodes started by launch/elasticsearch.sh in `home`."""

  home: pathlib.Path
  nodes: int = 3
  port: int = 0

  def __post_init__(self):
    if not self.port:
      self.port = free_port_block(self.nodes)

  @property
  def urls(self) -> tuple[str, ...]:
    return tuple(f'http://127.0.0.1:{self.port + i}' for i in range(self.nodes))

  def env(self, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        'ELASTICSEARCH_PORT': str(self.port),
        'ELASTICSEARCH_HOME': str(self.home),
        # The nodes end with this process even if a test dies mid-way.
        'ELASTICSEARCH_STOP_WITH_PID': str(os.getpid()),
        'CI': '',
        **extra,
    }

  def run(self, command: str, nodes: bool = True):
    extra = {'ELASTICSEARCH_NODES': str(self.nodes)} if nodes else {}
    return subprocess.run(
        ['bash', str(REPO / 'launch' / 'elasticsearch.sh'), command],
        env=self.env(**extra),
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )

  def start(self) -> None:
    done = self.run('start')
    if done.returncode:
      raise RuntimeError(f'cluster start failed: {done.stderr}{done.stdout}')

  def stop(self) -> subprocess.CompletedProcess:
    return self.run('stop', nodes=False)

  def pid(self, i: int) -> int:
    return int((self.home / f'node-{i}' / 'node.pid').read_text())

  def kill(self, i: int) -> int:
    """SIGKILLs node i; returns its pid once the process is gone."""
    pid = self.pid(i)
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
      if not pathlib.Path(f'/proc/{pid}').exists():
        break
      time.sleep(0.1)
    return pid

  def health(self, url: str | None = None, **params: str) -> dict:
    query = '&'.join(f'{k}={v}' for k, v in params.items())
    return get_json(f'{url or self.urls[0]}/_cluster/health?{query}')

  def wait_green(self, url: str | None = None, timeout_s: int = 120) -> dict:
    return self.health(
        url,
        wait_for_status='green',
        wait_for_nodes=str(self.nodes),
        wait_for_no_initializing_shards='true',
        timeout=f'{timeout_s}s',
    )
