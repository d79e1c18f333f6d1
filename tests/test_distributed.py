"""Tests of search_agent/distributed.py: topology from the environment, and
two real JAX processes joined on 127.0.0.1 by launch.processes."""

import io
import json

import pytest

from launch import processes as processes_lib
from launch import spec as spec_lib
from search_agent import distributed

_PROBE = """
import json, os, sys
from search_agent import distributed
topo = distributed.initialize()
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()), ('data',))
sharding = NamedSharding(mesh, P('data'))
local = np.arange(4, dtype=np.float32) + 4 * jax.process_index()
x = jax.make_array_from_process_local_data(sharding, local, (8,))
total = float(jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x))
decided = distributed.broadcast(
    {'groups': [jax.process_index(), 'from', os.getpid()]})
distributed.barrier('probe')
out = dict(topo=topo.__dict__, total=total, decided=decided,
           host=distributed.host_id(), writer=distributed.is_writer(),
           devices=jax.device_count(), local=jax.local_device_count())
workdir = sys.argv[1].split('=', 1)[1]
with open(os.path.join(workdir, f'p{jax.process_index()}.json'), 'w') as f:
  json.dump(out, f)
"""


def test_one_process_without_a_coordinator():
  topo = distributed.detect({})
  assert topo == distributed.Topology(kind='single')


def test_local_run_from_the_launchers_variables():
  topo = distributed.detect(
      {
          'JAX_COORDINATOR_ADDRESS': '127.0.0.1:1234',
          'TPU_WORKER_ID': '1',
          'TPU_WORKER_HOSTNAMES': '127.0.0.1,127.0.0.1',
      }
  )
  assert topo == distributed.Topology(
      kind='local',
      coordinator='127.0.0.1:1234',
      num_processes=2,
      process_id=1,
      worker_id=1,
  )


def test_multislice_ids_count_slices_first():
  topo = distributed.detect(
      {
          'JAX_COORDINATOR_ADDRESS': 'h0:8476',
          'TPU_WORKER_ID': '2',
          'TPU_WORKER_HOSTNAMES': 'a,b,c,d',
          'MEGASCALE_NUM_SLICES': '2',
          'MEGASCALE_SLICE_ID': '1',
      }
  )
  assert (topo.num_processes, topo.process_id) == (8, 6)
  assert (topo.slice_id, topo.worker_id) == (1, 2)


def test_a_pod_leaves_detection_to_jax():
  topo = distributed.detect(
      {'TPU_WORKER_ID': '3', 'TPU_WORKER_HOSTNAMES': 'a,b,c,d'}
  )
  assert topo.kind == 'pod' and topo.worker_id == 3


@pytest.mark.parametrize(
    'env, message',
    [
        ({'TPU_WORKER_ID': '4', 'TPU_WORKER_HOSTNAMES': 'a,b'}, 'outside'),
        ({'TPU_WORKER_ID': 'x'}, 'not an integer'),
        (
            {
                'JAX_COORDINATOR_ADDRESS': 'h:1',
                'TPU_WORKER_HOSTNAMES': 'a,b',
            },
            'its own id',
        ),
        ({'MEGASCALE_NUM_SLICES': '2', 'MEGASCALE_SLICE_ID': '2'}, 'slices'),
    ],
)
def test_contradicting_variables_are_refused(env, message):
  with pytest.raises(distributed.DistributedError, match=message):
    distributed.detect(env)


@pytest.mark.slow
def test_two_processes_form_one_program(tmp_path, repo_root, monkeypatch):
  """Two real processes x 4 CPU devices: one 8-device mesh, a global sum of
  each process's own rows, process 0's decision on both, distinct hosts."""
  (tmp_path / 'probe_bin.py').write_text(_PROBE)
  monkeypatch.syspath_prepend(str(tmp_path))
  binary = spec_lib.Binary(
      module='probe_bin',
      flags={'workdir': str(tmp_path)},
      env={'PYTHONPATH': str(repo_root), 'JAX_PLATFORMS': 'cpu'},
  )
  out = io.StringIO()
  layout = processes_lib.Layout(processes=2, devices=8)
  assert (
      processes_lib.run(binary, layout, cwd=tmp_path, out=out) == 0
  ), out.getvalue()[-3000:]
  got = [json.loads((tmp_path / f'p{i}.json').read_text()) for i in (0, 1)]
  for i, g in enumerate(got):
    assert g['topo']['process_id'] == i and g['topo']['kind'] == 'local'
    assert (g['devices'], g['local']) == (8, 4)
    assert g['total'] == float(sum(range(8)))
    assert g['decided'] == got[0]['decided']
    assert g['writer'] == (i == 0)
  assert got[0]['decided']['groups'][0] == 0
  assert [g['host'] for g in got] == ['s0-h0', 's0-h1']


def test_host_id_comes_from_the_environment_without_joining(monkeypatch):
  """An independent role (a rollout worker) never initializes: its name
  still differs per host."""
  monkeypatch.setenv('TPU_WORKER_ID', '3')
  monkeypatch.setenv('TPU_WORKER_HOSTNAMES', 'a,b,c,d')
  monkeypatch.setenv('MEGASCALE_NUM_SLICES', '2')
  monkeypatch.setenv('MEGASCALE_SLICE_ID', '1')
  assert distributed.host_id() == 's1-h3'


@pytest.mark.slow
def test_the_rollout_server_refuses_to_span_processes(tmp_path, repo_root):
  """Two processes of `search_agent.serving` form one program; the server
  refuses before it loads a model, naming what to do instead."""
  binary = spec_lib.Binary(
      module='search_agent.serving',
      flags={'config': 'tpu_configs/serve.py:tiny'},
      env={'JAX_PLATFORMS': 'cpu'},
  )
  out = io.StringIO()
  layout = processes_lib.Layout(processes=2, devices=8, grace_s=5)
  status = processes_lib.run(binary, layout, cwd=repo_root, out=out)
  assert status == 1, out.getvalue()[-3000:]
  assert 'the rollout server runs on one host' in out.getvalue()
  assert 'one independent copy per host' in out.getvalue()
