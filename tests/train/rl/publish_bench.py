"""Weight publish and load seconds per GB, 1 vs 2 publishing processes.

  .venv/bin/python tests/train/rl/publish_bench.py [--mib=256] [--repeats=2]

For each process count, runs publish_hosts.py as that many joined processes
(8 CPU devices split between them) publishing `repeats` versions of `mib`
MiB of float32, then loads every version in this process onto a 4-device
mesh (another mesh than the publishers'). Prints one JSON line per count.
"""

import io
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'
HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(REPO), str(HERE)]

# pylint: disable=g-import-not-at-top,wrong-import-position
import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import numpy as np
import publish_hosts

from launch import processes as processes_lib
from launch import spec as spec_lib
from search_agent.train.rl import weight_sync


def main(argv):
  flags = dict(a[2:].split('=', 1) for a in argv[1:])
  mib, repeats = float(flags.get('mib', 256)), int(flags.get('repeats', 2))
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ('x',))
  for n in (1, 2):
    with tempfile.TemporaryDirectory() as tmp:
      root = pathlib.Path(tmp) / 'weights'
      binary = spec_lib.Binary(
          module='publish_hosts',
          flags={'root': str(root), 'mib': mib, 'versions': repeats},
          env={'JAX_PLATFORMS': 'cpu', 'PYTHONPATH': str(REPO)},
      )
      out = io.StringIO()
      rc = processes_lib.run(
          binary, processes_lib.Layout(processes=n, devices=8), cwd=HERE,
          out=out,
      )  # fmt: skip
      if rc:
        raise SystemExit(out.getvalue()[-3000:])
      pub = json.loads((pathlib.Path(tmp) / f'publish-{n}.json').read_text())
      store = weight_sync.WeightStore(root, keep=repeats)
      shape = publish_hosts.params(1, mib)['w'].shape
      like = {
          'w': jax.ShapeDtypeStruct(
              shape, np.float32, sharding=NamedSharding(mesh, P('x'))
          ),
          'scale': jax.ShapeDtypeStruct(
              (), np.float32, sharding=NamedSharding(mesh, P())
          ),
      }
      loads = []
      for v in store.versions():
        t0 = time.perf_counter()
        got = store.load(v, like)
        jax.block_until_ready(got)
        loads.append(time.perf_counter() - t0)
      gb = pub['bytes'] / 1e9
      print(json.dumps({
          'publishers': n, 'gb': round(gb, 4),
          'publish_s': [round(s, 3) for s in pub['seconds']],
          'publish_s_per_gb': round(min(pub['seconds']) / gb, 2),
          'load_s': [round(s, 3) for s in loads],
          'load_s_per_gb': round(min(loads) / gb, 2),
      }), flush=True)  # fmt: skip


if __name__ == '__main__':
  main(sys.argv)
