"""Rollout servers the RL run starts on its own host.

`rollout.policy='server'` with `rollout.local_servers.count` = N > 0 and no
`rollout.server_urls`: the rollout role (or `all`) starts N
`python -m search_agent.serving` processes with `rollout.local_servers.config`,
the run's tokenizer and model sizes, as many slots as the worker keeps
rollouts in flight (`rollout.max_groups` x `group_size`; an `engine.slots`
in `overrides` wins), on free ports of 127.0.0.1; waits until each answers
`/health`; samples through them; and stops them when it ends. A server
starts with random weights: the worker pushes the store's newest version
(the run's initial weights at first) before its first request, as to any
server. Each child runs under `tied_child` (PR_SET_PDEATHSIG), so a run
killed by SIGKILL leaves no server behind; its output goes to
`<workdir>/servers/server-<i>.log`.

For CPU runs and hosts with accelerators to spare: on a TPU host the run
already holds the chips, so point `rollout.server_urls` at servers on other
hosts instead.
"""

import contextlib
import copy
import os
import socket
import subprocess
import sys
import time
from typing import Iterator, Sequence

from absl import logging
import httpx

from search_agent.train.rl import setup


class LocalServerError(RuntimeError):
  """A local rollout server did not come up; the message has its log."""


def wanted(c) -> int:
  """How many local servers the config asks for (0 = none)."""
  r = c.rollout
  if r.policy != 'server' or r.server_urls:
    return 0
  return int(r.local_servers.count)


def serve_argv(c, port: int, tokenizer_path: str) -> list[str]:
  """The command line of one local server of RL config `c` on `port`."""
  s = c.rollout.local_servers
  dims = tuple(f'{k}={v}' for k, v in sorted(dict(c.model.dims).items()))
  overrides = {
      'tokenizer': tokenizer_path,
      'template': c.tokenizer.chat_template,
      'model.dims': repr(dims),
      'engine.slots': str(c.rollout.max_groups * c.group_size),
      'host': '127.0.0.1',
  }
  overrides.update(_pairs(s.overrides, 'overrides', 'key=value'))
  return [
      sys.executable, '-m', 'search_agent.train.rl.tied_child',
      str(os.getpid()), 'search_agent.serving', f'--config={s.config}',
      *(f'--config.{k}={v}' for k, v in overrides.items()),
      f'--port={port}',
  ]  # fmt: skip


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _pairs(entries: Sequence[str], field: str, form: str) -> dict[str, str]:
  """('key=value', ...) of rollout.local_servers.`field` as a dict."""
  out = {}
  for entry in entries:
    key, sep, value = str(entry).partition('=')
    if not sep or not key.strip():
      raise setup.RLSetupError(
          f'rollout.local_servers.{field} entry {entry!r} is not {form}'
      )
    out[key.strip()] = value.strip()
  return out


def _env(entries: Sequence[str]) -> dict[str, str]:
  return dict(
      os.environ, PYTHONUNBUFFERED='1', **_pairs(entries, 'env', 'NAME=value')
  )


def _tail(path: str, lines: int = 30) -> str:
  try:
    with open(path, encoding='utf-8', errors='replace') as f:
      return ''.join(f.readlines()[-lines:])
  except OSError:
    return ''


def _wait_healthy(url: str, proc, log: str, timeout_s: float) -> None:
  start = time.monotonic()
  while time.monotonic() - start < timeout_s:
    if proc.poll() is not None:
      raise LocalServerError(
          f'the local rollout server for {url} exited with {proc.returncode}'
          f' before it was healthy; the end of {log}:\n{_tail(log)}'
      )
    try:
      if httpx.get(url + '/health', timeout=5.0).status_code == 200:
        return
    except httpx.TransportError:
      pass
    time.sleep(0.5)
  raise LocalServerError(
      f'the local rollout server {url} was not healthy after {timeout_s:.0f}'
      f' s (rollout.local_servers.start_timeout_s); the end of {log}:\n'
      f'{_tail(log)}'
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
def started(c, workdir: str) -> Iterator:
  """`c` with `rollout.server_urls` of the local servers it asks for (`c`
  itself when it asks for none); the servers stop when the block ends."""
  n = wanted(c)
  if not n:
    yield c
    return
  tok = setup.tokenizer_path(c, workdir)
  s = c.rollout.local_servers
  env = _env(s.env)
  logs_dir = os.path.join(workdir, 'servers')
  os.makedirs(logs_dir, exist_ok=True)
  procs, urls, logs = [], [], []
  try:
    for i in range(n):
      port = _free_port()
      logs.append(os.path.join(logs_dir, f'server-{i}.log'))
      with open(logs[-1], 'ab') as out:
        procs.append(
            subprocess.Popen(
                serve_argv(c, port, tok), env=env, stdout=out,
                stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
      urls.append(f'http://127.0.0.1:{port}')
    for url, proc, log in zip(urls, procs, logs):
      _wait_healthy(url, proc, log, float(s.start_timeout_s))
    logging.info('local rollout servers up: %s', ', '.join(urls))
    out = copy.deepcopy(c)
    out.rollout.server_urls = tuple(urls)
    yield out
  finally:
    _stop(procs)
