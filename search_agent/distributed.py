"""One program across hosts: start-up, the process's identity, one writer.

A TPU slice of H hosts runs every binary as H processes, one per host, each
seeing its local chips. `initialize()` is the first call of every JAX
binary's `main` and joins those processes into one JAX program:

- a pod (XPK's JobSet sets `TPU_WORKER_HOSTNAMES` or `TPU_PROCESS_ADDRESSES`,
  and `MEGASCALE_*` on multislice): `jax.distributed.initialize()` detects
  the coordinator, process count and id itself;
- a local multi-process run (`python -m launch.local --processes=N`): the
  same variables plus `JAX_COORDINATOR_ADDRESS=127.0.0.1:PORT`, passed to
  `jax.distributed.initialize` explicitly (JAX does not detect a cluster on
  CPU);
- anything else: one process, nothing to do.

SPMD roles (SFT, the RL learner) then run one global mesh; process 0 is the
one writer of metrics, reports and manifests (`is_writer`), `barrier` makes
the others wait for it, and `broadcast` hands process 0's decisions (which
replay groups form a chunk) to every process. Independent roles (rollout
workers, servers) take `host_id()` as their identity and refuse to span
hosts (`require_one_process`). docs/pods.md describes the whole model.
"""

import dataclasses
import json
import os
from typing import Any, Callable, Mapping

from absl import flags
from absl import logging
import jax
from jax._src import distributed as jax_distributed  # no public barrier
from jax.experimental import multihost_utils
import numpy as np

# The XPK/JobSet variables (GKE TPU workloads) and JAX's own.
WORKER_ID = 'TPU_WORKER_ID'
WORKER_HOSTNAMES = 'TPU_WORKER_HOSTNAMES'
PROCESS_ADDRESSES = 'TPU_PROCESS_ADDRESSES'
NUM_SLICES = 'MEGASCALE_NUM_SLICES'
SLICE_ID = 'MEGASCALE_SLICE_ID'
MEGASCALE_COORDINATOR = 'MEGASCALE_COORDINATOR_ADDRESS'
COORDINATOR = 'JAX_COORDINATOR_ADDRESS'
# Seconds without a heartbeat after which the coordination service declares a
# process dead and stops the others (JAX's default is 100).
HEARTBEAT_TIMEOUT = 'SEARCH_AGENT_HEARTBEAT_TIMEOUT_S'
# How long a barrier waits for the slowest process (compiling a step on a
# busy host can take minutes).
BARRIER_TIMEOUT_S = 1800


class DistributedError(RuntimeError):
  """The process environment is inconsistent or a role cannot span hosts."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Topology:
  """How this process joins the program.

  Attributes:
    kind: 'single' (one process), 'local' (explicit coordinator, e.g.
      launch.local on 127.0.0.1) or 'pod' (JAX detects the cluster).
    coordinator: host:port of process 0's coordination service ('' = JAX
      detects it).
    num_processes: Processes in the program (0 = JAX detects it).
    process_id: This process's index (-1 = JAX detects it).
    slice_id: The slice this host belongs to (multislice; 0 otherwise).
    worker_id: This host's index within its slice.
  """

  kind: str
  coordinator: str = ''
  num_processes: int = 1
  process_id: int = 0
  slice_id: int = 0
  worker_id: int = 0


def _int(environ: Mapping[str, str], key: str, default: int) -> int:
  value = environ.get(key, '')
  if not value:
    return default
  try:
    return int(value)
  except ValueError as e:
    raise DistributedError(f'{key}={value!r} is not an integer') from e


def detect(environ: Mapping[str, str] | None = None) -> Topology:
  """The topology the environment describes (see the module docstring).

  Raises:
    DistributedError: The variables contradict each other (an id outside
      the host list, a local run without its worker id).
  """
  env = os.environ if environ is None else environ
  hosts = env.get(PROCESS_ADDRESSES) or env.get(WORKER_HOSTNAMES) or ''
  per_slice = len(hosts.split(',')) if hosts else 1
  slices = _int(env, NUM_SLICES, 1)
  slice_id = _int(env, SLICE_ID, 0)
  worker = _int(env, WORKER_ID, 0)
  if not 0 <= slice_id < slices:
    raise DistributedError(f'{SLICE_ID}={slice_id} outside {slices} slices')
  if not 0 <= worker < per_slice:
    raise DistributedError(
        f'{WORKER_ID}={worker} outside the {per_slice} hosts of'
        f' {WORKER_HOSTNAMES}'
    )
  count = per_slice * slices
  coordinator = env.get(COORDINATOR, '')
  common = dict(slice_id=slice_id, worker_id=worker)
  if coordinator:
    if count > 1 and WORKER_ID not in env:
      raise DistributedError(
          f'{COORDINATOR} is set for {count} processes but {WORKER_ID} is not:'
          ' every process needs its own id'
      )
    return Topology(
        kind='local' if count > 1 else 'single',
        coordinator=coordinator,
        num_processes=count,
        process_id=slice_id * per_slice + worker,
        **common,
    )
  if count > 1 or env.get(MEGASCALE_COORDINATOR):
    return Topology(kind='pod', num_processes=0, process_id=-1, **common)
  return Topology(kind='single', **common)


_topology: Topology | None = None


def initialize(environ: Mapping[str, str] | None = None) -> Topology:
  """Joins this process to the program; call before anything touches JAX.

  Idempotent. One process does nothing (no coordination service).

  Returns:
    The topology, with the pod's count and id filled in from JAX.
  """
  global _topology
  if _topology is not None:
    return _topology
  env = os.environ if environ is None else environ
  topo = detect(env)
  if topo.kind != 'single':
    kwargs = {}
    timeout = _int(env, HEARTBEAT_TIMEOUT, 0)
    if timeout:
      kwargs['heartbeat_timeout_seconds'] = timeout
    if topo.kind == 'local':
      kwargs.update(
          coordinator_address=topo.coordinator,
          num_processes=topo.num_processes,
          process_id=topo.process_id,
      )
    jax.distributed.initialize(**kwargs)
    # The first collective over every device while the processes are
    # together: JAX's CPU collectives (gloo) give the processes 30 s, not
    # configurable, to meet at a device group's first collective.
    multihost_utils.sync_global_devices('search_agent.distributed.initialize')
    _orbax_uses_coordination_barriers()
    topo = dataclasses.replace(
        topo,
        num_processes=jax.process_count(),
        process_id=jax.process_index(),
    )
    logging.info(
        'process %d of %d (%s, slice %d worker %d), %d local devices',
        topo.process_id,
        topo.num_processes,
        topo.kind,
        topo.slice_id,
        topo.worker_id,
        jax.local_device_count(),
    )
  _topology = topo
  return topo


def _orbax_uses_coordination_barriers() -> None:
  """Orbax's barriers through the coordination service, not collectives.

  By default orbax meets the other processes with a device collective, some
  of them from its own threads (removing old checkpoints, finishing a
  save); one of those crossing a training step's collectives on another
  process aborted a 2-process run (gloo: 'Received data size doesn't match
  expected size ... collective mismatch').
  """
  name = 'experimental_orbax_use_distributed_barrier'
  if name in flags.FLAGS:
    flags.FLAGS[name].value = True


def topology() -> Topology:
  """The topology `initialize` joined (one process if it was not called)."""
  return _topology or Topology(kind='single')


def is_writer() -> bool:
  """True on the process that writes the run's shared files (process 0)."""
  return jax.process_index() == 0


def host_id() -> str:
  """This host's identity for independent roles: 's<slice>-h<worker>'.

  Two hosts of one workload never share it, so rollout workers started on
  every host of a slice (or of several slices) need no worker_id flag. It is
  read from the environment when the process joined no program (an
  independent role never calls `initialize`).
  """
  topo = _topology or detect()
  return f's{topo.slice_id}-h{topo.worker_id}'


def require_one_process(what: str) -> None:
  """Raises DistributedError if this program spans more than one process."""
  if jax.process_count() > 1:
    raise DistributedError(
        f'{what} runs on one host: it was started as {jax.process_count()}'
        ' processes. Run one independent copy per host instead (each on its'
        ' local devices, identity from search_agent.distributed.host_id());'
        ' docs/pods.md shows how.'
    )


def barrier(name: str, timeout_s: float = BARRIER_TIMEOUT_S) -> None:
  """Waits until every process reaches the barrier `name` (no-op alone).

  The coordination service's barrier, not a device collective: it waits
  `timeout_s` for the slowest process, where a collective's first use gives
  CPU processes 30 s. Each name may be used once per run.
  """
  if jax.process_count() > 1:
    jax_distributed.global_state.client.wait_at_barrier(
        name, int(timeout_s * 1000)
    )


def together(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
  """`fn` (a jitted function), compiled before its first run per signature,
  then run only once every process has compiled it too.

  Processes compile at different speeds (one may load the executable from a
  cache, another compile it for minutes); a program's first collective then
  waits for the slowest at a `barrier`. One process: `fn` compiled ahead,
  run as is.
  """
  compiled: dict[Any, Any] = {}

  def call(*args):
    leaves, tree = jax.tree.flatten(args)
    key = (tree, tuple(_signature(x) for x in leaves))
    if key not in compiled:
      exe = fn.lower(*args).compile()
      barrier(f'{name}/compiled/{len(compiled)}')
      compiled[key] = exe
    return compiled[key](*args)

  return call


def _signature(x: Any) -> Any:
  sharding = getattr(x, 'sharding', None)
  return (
      getattr(x, 'shape', None),
      str(getattr(x, 'dtype', type(x))),
      sharding,
  )


def broadcast(value: Any) -> Any:
  """Process 0's JSON-serializable `value`, returned on every process.

  Every process must call it at the same point (a collective); the others'
  `value` is ignored.
  """
  if jax.process_count() == 1:
    return value
  data = json.dumps(value).encode() if is_writer() else b''
  size = multihost_utils.broadcast_one_to_all(np.int64(len(data)))
  buf = np.zeros(int(size), np.uint8)
  if is_writer():
    buf[:] = np.frombuffer(data, np.uint8)
  out = multihost_utils.broadcast_one_to_all(buf)
  return json.loads(np.asarray(out, np.uint8).tobytes().decode())


def gather(value: Any) -> list[Any]:
  """Every process's JSON-serializable `value`, in process order, on all.

  A collective, like `broadcast`.
  """
  if jax.process_count() == 1:
    return [value]
  data = np.frombuffer(json.dumps(value).encode(), np.uint8)
  sizes = multihost_utils.process_allgather(np.int64(data.size))
  buf = np.zeros(int(np.max(sizes)), np.uint8)
  buf[: data.size] = data
  rows = np.asarray(multihost_utils.process_allgather(buf))
  return [
      json.loads(rows[i, : int(n)].tobytes().decode())
      for i, n in enumerate(np.asarray(sizes).reshape(-1))
  ]
