"""Host rows -> global arrays (one process, 8 CPU devices): the rows a
process holds, and arrays equal to placing the whole batch."""

import jax
import numpy as np
import pytest

from search_agent.train import host_batch


def _sharding(shape, names, spec):
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(shape), names)
  return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))


def test_one_process_holds_every_row():
  sharding = _sharding((4, 2), ('fsdp', 'context'), (None, 'fsdp', 'context'))
  assert host_batch.rows(sharding, (2, 8, 16)) == (0, 8)
  assert host_batch.block(sharding, (2, 8, 16)) == (
      slice(0, 2),
      slice(0, 8),
      slice(0, 16),
  )


def test_to_global_equals_placing_the_whole_batch():
  sharding = _sharding((4, 2), ('fsdp', 'context'), (None, 'fsdp', 'context'))
  rng = np.random.default_rng(0)
  mask = (rng.random((2, 8, 16)) < 0.2).astype(np.int32)
  batch = {
      'inputs': rng.integers(0, 99, (2, 8, 16), dtype=np.int32),
      'loss_mask': mask,
  }
  out = host_batch.to_global(batch, sharding, 8, loss_positions_multiple=4)
  np.testing.assert_array_equal(np.asarray(out['inputs']), batch['inputs'])
  assert out['inputs'].sharding == sharding
  want = host_batch.data_lib.score_index(mask, 4)
  if want is None:
    assert 'score_index' not in out
  else:
    np.testing.assert_array_equal(np.asarray(out['score_index']), want)
  whole = host_batch.from_whole(batch, sharding)
  np.testing.assert_array_equal(np.asarray(whole['loss_mask']), mask)


def test_benchmark_pulse():
  """The placement benchmark's measurement, one process, a 1 MiB batch."""
  out = host_batch.placement_seconds(1, 1)
  assert (out['processes'], out['devices']) == (1, 8)
  assert out['batch_mib'] == pytest.approx(1.0)
  assert out['device_put_s'] > 0 and out['own_rows_s'] > 0
