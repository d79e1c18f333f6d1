r"""What a batch costs to place on a mesh spanning processes.

  python -m launch.local --config=tpu_configs/launch/hosts.py:tiny \
      --processes=2 --config.flags.workdir=/tmp/hosts

Every process builds one [M, b, T] int32 batch of `--mib` MiB on the global
mesh (b over all devices) two ways and times each (median of `--repeats`,
after one warm-up):
  * `device_put`: every process holds the whole batch in numpy and
    `jax.device_put`s it (what the trainers did before: JAX checks that the
    hosts agree, an all-gather of the batch);
  * `own_rows`: every process holds only its rows (`host_batch.rows`) and
    `host_batch.to_global` makes the global array
    (`make_array_from_process_local_data`).
Process 0 writes WORKDIR/hosts_benchmark.json and prints it.
"""

import json
import os
import statistics
import time

from absl import app
from absl import flags
import jax
import numpy as np

from search_agent import distributed
from search_agent.train import host_batch

_MIB = flags.DEFINE_integer('mib', 64, 'Batch size in MiB.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Timed repetitions.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Where the JSON goes.')


def _timed(fn, repeats: int) -> float:
  jax.block_until_ready(fn())
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  return statistics.median(times)


def measure(mib: int, repeats: int) -> dict:
  """Seconds to place a `mib` MiB batch both ways (see the docstring)."""
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ('batch',))
  sharding = jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec(None, 'batch', None)
  )
  b, t = jax.device_count(), 2048
  m = max(mib * 2**20 // (4 * b * t), 1)
  whole = np.arange(m * b * t, dtype=np.int32).reshape(m, b, t)
  start, stop = host_batch.rows(sharding, whole.shape)
  own = {'inputs': whole[:, start:stop], 'loss_mask': whole[:, start:stop]}
  put = _timed(lambda: jax.device_put(whole, sharding), repeats)
  local = _timed(
      lambda: host_batch.to_global(own, sharding, b)['inputs'], repeats
  )
  return {
      'processes': jax.process_count(),
      'devices': jax.device_count(),
      'batch_mib': whole.nbytes / 2**20,
      'device_put_s': put,
      # Two features are placed: report the time of one.
      'own_rows_s': local / 2,
      'device_put_over_own_rows': put / (local / 2),
  }


def main(argv):
  del argv
  distributed.initialize()
  out = measure(_MIB.value, _REPEATS.value)
  if distributed.is_writer():
    os.makedirs(_WORKDIR.value, exist_ok=True)
    with open(os.path.join(_WORKDIR.value, 'hosts_benchmark.json'), 'w') as f:
      json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == '__main__':
  flags.mark_flag_as_required('workdir')
  app.run(main)
