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

from absl import app
from absl import flags

from search_agent import distributed
from search_agent.train import host_batch

_MIB = flags.DEFINE_integer('mib', 64, 'Batch size in MiB.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Timed repetitions.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Where the JSON goes.')


def main(argv):
  del argv
  distributed.initialize()
  out = host_batch.placement_seconds(_MIB.value, _REPEATS.value)
  if distributed.is_writer():
    os.makedirs(_WORKDIR.value, exist_ok=True)
    with open(os.path.join(_WORKDIR.value, 'hosts_benchmark.json'), 'w') as f:
      json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == '__main__':
  flags.mark_flag_as_required('workdir')
  app.run(main)
