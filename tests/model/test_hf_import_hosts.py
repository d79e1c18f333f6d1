"""HF import on 2 real processes x 4 CPU devices: each process restores only
the shards its devices hold, and the result equals a 1-process load."""

import dataclasses
import io
import json

import jax
import numpy as np
import pytest

from launch import processes as processes_lib
from launch import spec as spec_lib
from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import maxtext_model

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

_PROBE = """
import dataclasses, json, os, sys
from search_agent import distributed
distributed.initialize()
import jax, jax.numpy as jnp, numpy as np
from search_agent.model import families, hf_import, maxtext_model
fixture, path, out = sys.argv[1].split('=', 1)[1].split(',')
base = dataclasses.replace(
    families.model_preset('tiny'), max_target_length=32, logits_chunk=8)
cfg = hf_import.model_config_for_hf(fixture, base)
model = maxtext_model.build(cfg, families.layout_preset('fsdp'))
params = hf_import.load_params(model, path)
rows = {}
for kp, x in jax.tree_util.tree_leaves_with_path(params):
  held = {tuple((s.start, s.stop) for s in sh.index) for sh in x.addressable_shards}
  local = sum(int(np.prod([(b or n) - (a or 0) for (a, b), n in zip(k, x.shape)]))
              for k in held)
  total = jax.jit(jnp.sum, out_shardings=jax.sharding.NamedSharding(
      model.mesh, jax.sharding.PartitionSpec()))(x.astype(jnp.float32))
  rows[jax.tree_util.keystr(kp)] = dict(
      size=int(x.size), local=local, sum=float(total))
with open(os.path.join(out, f'p{jax.process_index()}.json'), 'w') as f:
  json.dump(rows, f)
"""


def test_each_host_restores_only_its_shards(tmp_path, repo_root, monkeypatch):
  fixture = repo_root / 'tests' / 'fixtures' / 'hf_tiny'
  base = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=32, logits_chunk=8
  )
  cfg = hf_import.model_config_for_hf(str(fixture), base)
  path = hf_import.convert_in_subprocess(
      str(fixture), str(tmp_path / 'mt'), cfg
  )
  (tmp_path / 'probe_bin.py').write_text(_PROBE)
  monkeypatch.syspath_prepend(str(tmp_path))
  binary = spec_lib.Binary(
      module='probe_bin',
      flags={'args': f'{fixture},{path},{tmp_path}'},
      env={'PYTHONPATH': str(repo_root), 'JAX_PLATFORMS': 'cpu'},
  )
  out = io.StringIO()
  layout = processes_lib.Layout(processes=2, devices=8)
  status = processes_lib.run(binary, layout, cwd=tmp_path, out=out)
  assert status == 0, out.getvalue()[-3000:]
  got = [json.loads((tmp_path / f'p{i}.json').read_text()) for i in (0, 1)]
  # The same parameters as one process loading them all.
  model = maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:1]
  )
  want = {
      jax.tree_util.keystr(kp): float(np.sum(np.asarray(x, np.float32)))
      for kp, x in jax.tree_util.tree_leaves_with_path(
          hf_import.load_params(model, path)
      )
  }
  assert set(got[0]) == set(want)
  split = 0
  for name, total in want.items():
    for g in got:
      assert g[name]['sum'] == pytest.approx(total, rel=1e-5, abs=1e-5), name
    # A parameter sharded over the 8 devices: each process holds its half.
    if got[0][name]['local'] < got[0][name]['size']:
      split += 1
      assert (
          got[0][name]['local'] + got[1][name]['local'] == got[0][name]['size']
      )
  assert split >= len(want) // 2  # most parameters are split over hosts
