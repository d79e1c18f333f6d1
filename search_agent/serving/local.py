"""Rollout servers a run starts on its own host, and stops when it ends.

`started` launches `python -m search_agent.serving` children (each its own
serve config and `--config.KEY=VALUE` overrides) on free 127.0.0.1 ports,
waits until each answers `/health` and yields their URLs; when the block
ends it terminates them. Each child runs under `tied_child`
(PR_SET_PDEATHSIG), so a run killed by SIGKILL leaves no server behind; its
output goes to the log file it was given. The RL run (train/rl/
local_servers.py) and `eval.run`'s `policy.kind='served'` use it. Nothing
here imports JAX: the server is another process.
"""

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from typing import Iterator, Mapping, Sequence

from absl import logging
import httpx


class LocalServerError(RuntimeError):
  """A local rollout server did not come up; the message has its log."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerSpec:
  """One local server.

  Attributes:
    config: `--config=` of the server (a tpu_configs/serve.py variant).
    overrides: `--config.KEY=VALUE` pairs, in order.
    log: Its output file (appended to).
  """

  config: str
  overrides: Mapping[str, str]
  log: str


def free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def serve_argv(spec: ServerSpec, port: int) -> list[str]:
  """The command line of one server on `port`, tied to this process."""
  return [
      sys.executable, '-m', 'search_agent.serving.tied_child',
      str(os.getpid()), 'search_agent.serving', f'--config={spec.config}',
      *(f'--config.{k}={v}' for k, v in spec.overrides.items()),
      f'--port={port}',
  ]  # fmt: skip


def pairs(entries: Sequence[str], what: str, form: str) -> dict[str, str]:
  """('KEY=value', ...) as a dict, stripped; ValueError naming `what` (the
  config field) and `form` for an entry without '=' or a key."""
  out = {}
  for entry in entries:
    key, sep, value = str(entry).partition('=')
    if not sep or not key.strip():
      raise ValueError(f'{what} entry {entry!r} is not {form}')
    out[key.strip()] = value.strip()
  return out


# A server is one host's program: a child never joins the coordinator of the
# processes that started it (search_agent.distributed).
_PROCESS_VARIABLES = (
    'JAX_COORDINATOR_ADDRESS',
    'TPU_WORKER_HOSTNAMES',
    'TPU_PROCESS_ADDRESSES',
)


def env_pairs(entries: Sequence[str], what: str) -> dict[str, str]:
  """The environment of the children: this one's, without the variables
  that join processes into one program, plus 'NAME=value' `entries`
  (`what` names the config field in errors)."""
  base = {k: v for k, v in os.environ.items() if k not in _PROCESS_VARIABLES}
  return {
      **base,
      'PYTHONUNBUFFERED': '1',
      **pairs(entries, what, 'NAME=value'),
  }


def tail(path: str, lines: int = 30) -> str:
  try:
    with open(path, encoding='utf-8', errors='replace') as f:
      return ''.join(f.readlines()[-lines:])
  except OSError:
    return ''


def _wait_healthy(url, proc, log: str, timeout_s: float, what: str) -> None:
  start = time.monotonic()
  while time.monotonic() - start < timeout_s:
    if proc.poll() is not None:
      raise LocalServerError(
          f'the local rollout server for {url} exited with {proc.returncode}'
          f' before it was healthy; the end of {log}:\n{tail(log)}'
      )
    try:
      if httpx.get(url + '/health', timeout=5.0).status_code == 200:
        return
    except httpx.TransportError:
      pass
    time.sleep(0.5)
  raise LocalServerError(
      f'the local rollout server {url} was not healthy after {timeout_s:.0f}'
      f' s ({what}); the end of {log}:\n{tail(log)}'
  )


def _stop(procs) -> None:
  for proc in procs:
    if proc.poll() is None:
      proc.terminate()
  for proc in procs:
    try:
      proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()


@contextlib.contextmanager
def started(
    specs: Sequence[ServerSpec],
    env: Mapping[str, str],
    timeout_s: float,
    what: str = 'start_timeout_s',
) -> Iterator[list[str]]:
  """Starts one server per spec; yields their URLs once all are healthy
  (`timeout_s` each; `what` names that setting in the error) and stops
  them when the block ends, however it ends."""
  procs, urls = [], []
  try:
    for spec in specs:
      os.makedirs(os.path.dirname(spec.log) or '.', exist_ok=True)
      port = free_port()
      with open(spec.log, 'ab') as out:
        procs.append(
            subprocess.Popen(
                serve_argv(spec, port), env=dict(env), stdout=out,
                stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
      urls.append(f'http://127.0.0.1:{port}')
    for url, proc, spec in zip(urls, procs, specs):
      _wait_healthy(url, proc, spec.log, timeout_s, what)
    logging.info('local rollout servers up: %s', ', '.join(urls))
    yield urls
  finally:
    _stop(procs)
