"""Runs one binary as N processes on 127.0.0.1, as a pod's hosts run it.

Each process gets the environment XPK's JobSet gives a TPU host
(`TPU_WORKER_ID`, `TPU_WORKER_HOSTNAMES`) plus `JAX_COORDINATOR_ADDRESS` on a
free loopback port, which `search_agent.distributed.initialize` turns into
`jax.distributed.initialize`. On CPU the `devices` host devices are split
evenly (`--xla_force_host_platform_device_count`). The launcher's own lines
start with `[launch]` (each process's pid first), every output line of a
process with the process (`[p1] ...`); when one process exits non-zero the
others are stopped (SIGTERM, then SIGKILL after a grace period), and the
run's status is the first non-zero one.
"""

import dataclasses
import os
import pathlib
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Mapping, TextIO

from launch import spec as spec_lib

_DEVICE_FLAG = re.compile(r'--xla_force_host_platform_device_count=\S+')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Layout:
  """How many processes, and the CPU devices they share.

  Attributes:
    processes: Processes (hosts) to start.
    devices: Host devices in all, split evenly on CPU; 0 leaves XLA_FLAGS
      as it is (accelerators: each process sees its own chips).
    grace_s: Seconds between SIGTERM and SIGKILL when stopping the others.
  """

  processes: int = 1
  devices: int = 8
  grace_s: float = 10.0

  def __post_init__(self):
    if self.processes < 1:
      raise spec_lib.LaunchError(
          f'--processes must be >= 1, got {self.processes}'
      )
    if self.devices and self.devices % self.processes:
      raise spec_lib.LaunchError(
          f'--devices={self.devices} cannot be split evenly over'
          f' --processes={self.processes}'
      )


def free_port() -> int:
  """A TCP port on 127.0.0.1 that nothing listens on right now."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def process_env(
    base: Mapping[str, str], layout: Layout, index: int, port: int
) -> dict[str, str]:
  """The environment of process `index` (see the module docstring)."""
  env = dict(base)
  if layout.devices:
    per = layout.devices // layout.processes
    flags = _DEVICE_FLAG.sub('', env.get('XLA_FLAGS', '')).split()
    flags.append(f'--xla_force_host_platform_device_count={per}')
    env['XLA_FLAGS'] = ' '.join(flags)
  if layout.processes > 1:
    # The launcher stops the others when one dies; the coordination
    # service's heartbeat only has to outlast a busy machine's stalls.
    env.setdefault('SEARCH_AGENT_HEARTBEAT_TIMEOUT_S', '300')
    if layout.devices:
      # CPU (gloo) collectives give a new communicator 30 s to form: a
      # process that loads a step from the persistent compilation cache
      # while another compiles it reaches the step's first collective too
      # early and fails (measured: GetKeyValue() timed out after 30 s).
      env['JAX_ENABLE_COMPILATION_CACHE'] = 'false'
    env['JAX_COORDINATOR_ADDRESS'] = f'127.0.0.1:{port}'
    env['TPU_WORKER_ID'] = str(index)
    env['TPU_WORKER_HOSTNAMES'] = ','.join(['127.0.0.1'] * layout.processes)
  return env


def _pump(stream, prefix: str, out: TextIO, lock: threading.Lock) -> None:
  for line in iter(stream.readline, ''):
    with lock:
      out.write(prefix + line)
      out.flush()
  stream.close()


def _stop(procs: list[subprocess.Popen], grace_s: float) -> None:
  for p in procs:
    if p.poll() is None:
      p.send_signal(signal.SIGTERM)
  deadline = time.monotonic() + grace_s
  for p in procs:
    try:
      p.wait(max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
      p.kill()
      p.wait()


def run(
    binary: spec_lib.Binary,
    layout: Layout,
    cwd: pathlib.Path = spec_lib.REPO,
    out: TextIO | None = None,
) -> int:
  """Runs `binary` as `layout.processes` processes; returns the run's status.

  Returns:
    0 when every process exits 0, else the first non-zero status seen (a
    process killed by a signal counts as -signal, as subprocess gives it).
  """
  binary.check_module()
  out = out or sys.stdout
  port = free_port()
  base = {**os.environ, **binary.env, 'PYTHONUNBUFFERED': '1'}
  lock = threading.Lock()
  procs, pumps = [], []
  for i in range(layout.processes):
    p = subprocess.Popen(
        binary.argv(sys.executable),
        cwd=cwd,
        env=process_env(base, layout, i, port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors='replace',
    )
    procs.append(p)
    with lock:
      out.write(f'[launch] process {i} pid {p.pid}\n')
      out.flush()
    t = threading.Thread(
        target=_pump, args=(p.stdout, f'[p{i}] ', out, lock), daemon=True
    )
    t.start()
    pumps.append(t)
  exits: queue.Queue = queue.Queue()  # (index, status) in the order of exit
  for i, p in enumerate(procs):
    threading.Thread(
        target=lambda i=i, p=p: exits.put((i, p.wait())), daemon=True
    ).start()
  status = 0
  try:
    for _ in procs:
      i, rc = exits.get()
      if rc != 0 and status == 0:
        status = rc
        with lock:
          out.write(
              f'[launch] process {i} exited with {rc}: stopping the others\n'
          )
        _stop([p for p in procs if p.poll() is None], layout.grace_s)
  finally:
    _stop(procs, layout.grace_s)
    for t in pumps:
      t.join(timeout=5)
  return status
