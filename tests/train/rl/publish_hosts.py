"""Publishes weight versions from every process of one JAX program.

  python -m publish_hosts --root=DIR [--mib=8] [--versions=2]

Run as N processes (launch.processes): joins them (distributed.initialize),
places `params(version, mib)` on a mesh over every process's devices (rows
sharded, a replicated scalar beside them), publishes each version through
WeightStore (collective) and process 0 writes the seconds of each publish
to DIR/../publish-<N>.json. The test and the benchmark load the versions
onto another mesh and compare them with `params`.
"""

import json
import os
import sys
import time

from absl import logging
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import numpy as np

from search_agent import distributed
from search_agent.train.rl import weight_sync

COLS = 1024


def params(version: int, mib: float) -> dict[str, np.ndarray]:
  """The host values of one version (float32, `mib` MiB of rows)."""
  rows = max(8, int(mib * 2**20 / 4 / COLS) // 8 * 8)
  w = np.arange(rows * COLS, dtype=np.float32).reshape(rows, COLS) % 1000
  return {'w': w + version, 'scale': np.float32(version)}


def main(argv: list[str]) -> None:
  flags = dict(a[2:].split('=', 1) for a in argv[1:])
  logging.set_verbosity(logging.INFO)  # the publish log lines
  distributed.initialize()  # before anything touches a JAX backend
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ('d',))
  spec = {'w': NamedSharding(mesh, P('d')), 'scale': NamedSharding(mesh, P())}
  store = weight_sync.WeightStore(flags['root'], keep=5)
  seconds = []
  for v in range(1, int(flags.get('versions', 2)) + 1):
    host = params(v, float(flags.get('mib', 8)))
    placed = {
        k: jax.make_array_from_callback(
            x.shape, spec[k], lambda idx, x=x: np.asarray(x)[idx]
        )
        for k, x in host.items()
    }
    jax.block_until_ready(placed)
    t0 = time.perf_counter()
    store.publish(placed, v)
    seconds.append(time.perf_counter() - t0)
  if distributed.is_writer():
    out = os.path.join(
        os.path.dirname(os.path.abspath(flags['root'])),
        f'publish-{jax.process_count()}.json',
    )
    nbytes = sum(np.asarray(x).nbytes for x in params(1, float(flags.get(
        'mib', 8))).values())  # fmt: skip
    with open(out, 'w', encoding='utf-8') as f:
      json.dump({'seconds': seconds, 'bytes': nbytes,
                 'processes': jax.process_count()}, f)  # fmt: skip


if __name__ == '__main__':
  main(sys.argv)
