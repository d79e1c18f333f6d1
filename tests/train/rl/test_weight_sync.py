"""Versioned weight directories and the sampler side of the sync."""

import shutil

import jax
import jax.numpy as jnp
import numpy as np

from search_agent.train.rl import weight_sync


def _params(x):
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ('d',))
  sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('d'))
  return {'w': jax.device_put(jnp.full((4, 3), x, jnp.float32), sh)}


class _Sampler:
  """Holds weights the way model.sampler.Sampler does (no model needed)."""

  batch_size, max_prompt_len = 2, 8

  def __init__(self):
    self.params, self.policy_version = None, -1

  def abstract_params(self):
    like = _params(0.0)
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        like,
    )

  def set_params(self, params, policy_version):
    self.params, self.policy_version = params, policy_version

  def generate(self, prompts, **kwargs):
    del kwargs
    return [self.policy_version] * len(prompts)


def test_publish_keeps_the_last_versions_and_loads_onto_a_mesh(tmp_path):
  store = weight_sync.WeightStore(tmp_path, keep=2)
  for v in range(4):
    store.publish(_params(float(v)), v)
  assert store.versions() == [2, 3]
  assert not list(tmp_path.glob('tmp-*'))  # nothing half-written left
  got = store.load(3, _params(0.0))
  np.testing.assert_array_equal(got['w'], np.full((4, 3), 3.0))
  assert got['w'].sharding == _params(0.0)['w'].sharding


def test_sampler_loads_between_requests_and_survives_a_bad_version(tmp_path):
  store = weight_sync.WeightStore(tmp_path, keep=3)
  synced = weight_sync.SyncedSampler(_Sampler(), store)
  store.publish(_params(0.0), 0)
  assert synced.wait_for_weights(5, lambda s: None) == 0
  store.publish(_params(1.0), 1)
  assert synced.generate([[1], [2]]) == [1, 1]  # stamped with the new one
  # Version 2 is corrupt: the sampler keeps serving 1 and says so.
  store.publish(_params(2.0), 2)
  shutil.rmtree(tmp_path / '2' / 'state')
  (tmp_path / '2' / 'state').mkdir()
  assert synced.generate([[1]]) == [1]
  assert synced.loads == [0, 1]
  assert synced.load_errors and synced.load_errors[0][0] == 2
  store.publish(_params(3.0), 3)
  assert synced.generate([[1]]) == [3]
  np.testing.assert_array_equal(synced.sampler.params['w'], 3.0)


def test_a_resumed_learner_replaces_the_versions_its_checkpoint_lost(tmp_path):
  """Checkpoint at 2, versions 3 and 4 published, crash: the resumed
  learner removes 3 and 4, and its new 3 is what samplers load."""
  store = weight_sync.WeightStore(tmp_path, keep=5)
  synced = weight_sync.SyncedSampler(_Sampler(), store)
  for v in range(5):
    store.publish(_params(float(v)), v)
  assert synced.generate([[1]]) == [4]  # a sampler on the lost update
  (tmp_path / '.tmp-3-dead').mkdir()  # a publish cut short by the crash
  assert store.rollback(2) == [3, 4]
  assert store.versions() == [0, 1, 2]
  assert not list(tmp_path.glob('.tmp-*'))
  store.publish(_params(30.0), 3)
  assert synced.generate([[1]]) == [3]  # the new 3, not the lost 4
  np.testing.assert_array_equal(synced.sampler.params['w'], 30.0)
  store.publish(_params(40.0), 4)
  assert synced.generate([[1]]) == [4]
  np.testing.assert_array_equal(synced.sampler.params['w'], 40.0)


def test_publishing_a_version_again_replaces_it(tmp_path):
  store = weight_sync.WeightStore(tmp_path, keep=3)
  synced = weight_sync.SyncedSampler(_Sampler(), store)
  store.publish(_params(1.0), 1)
  assert synced.generate([[1]]) == [1]
  first = store.stamp(1)
  store.publish(_params(7.0), 1)
  np.testing.assert_array_equal(store.load(1, _params(0.0))['w'], 7.0)
  assert store.stamp(1) not in ('', first)
  # Same number, new weights: the sampler reloads them.
  assert synced.generate([[1]]) == [1]
  np.testing.assert_array_equal(synced.sampler.params['w'], 7.0)
  assert synced.loads == [1, 1]
  assert sorted(p.name for p in tmp_path.iterdir()) == ['1']
