"""Params-only restore of trainer checkpoints (small trees, no MaxText).

The checkpoints are written by the trainers' own Checkpointer; the MaxText
end-to-end check (SFT -> sampler -> eval) is in
tests/train/sft/test_checkpoint_to_sampler.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from search_agent.model import checkpoint_params as cp
from search_agent.train import checkpoint as checkpoint_lib


def _params(scale: float) -> dict:
  return {
      'decoder': {'w': jnp.arange(32.0).reshape(8, 4) * scale},
      'embed': jnp.full((6,), scale),
  }


@pytest.fixture(scope='module')
def workdir(tmp_path_factory):
  """A workdir with checkpoints of steps 1 and 2 (params + optimizer)."""
  root = tmp_path_factory.mktemp('run')
  ckpt = checkpoint_lib.Checkpointer(
      root / 'checkpoints', checkpoint_lib.CheckpointConfig(every=1, keep=3)
  )
  for step in (1, 2):
    state = {
        'params': _params(step),
        'opt_state': {'mu': _params(0.5), 'count': jnp.int32(step)},
    }
    ckpt.save(step, state, {'position': step})
  ckpt.close()
  return root


def _like(dtype=jnp.float32) -> dict:
  mesh = jax.make_mesh((8,), ('x',))
  rows = jax.sharding.NamedSharding(mesh, jax.P('x'))
  rep = jax.sharding.NamedSharding(mesh, jax.P())
  return {
      'decoder': {'w': jax.ShapeDtypeStruct((8, 4), dtype, sharding=rows)},
      'embed': jax.ShapeDtypeStruct((6,), dtype, sharding=rep),
  }


def test_latest_and_given_step_restore_onto_the_target_sharding(workdir):
  like = _like()
  params, step = cp.restore_params(workdir, like)
  assert step == 2
  np.testing.assert_array_equal(
      params['decoder']['w'], _params(2)['decoder']['w']
  )
  assert params['decoder']['w'].sharding == like['decoder']['w'].sharding
  assert len(params['decoder']['w'].sharding.device_set) == 8
  # Only the params subtree comes back: no optimizer state.
  assert set(params) == {'decoder', 'embed'}
  params, step = cp.restore_params(workdir / 'checkpoints', like, step=1)
  assert step == 1
  np.testing.assert_array_equal(params['embed'], np.ones(6))


def test_restore_casts_to_the_target_dtype(workdir):
  params, _ = cp.restore_params(workdir, _like(jnp.bfloat16))
  assert params['decoder']['w'].dtype == jnp.bfloat16
  np.testing.assert_array_equal(
      params['decoder']['w'].astype(jnp.float32), _params(2)['decoder']['w']
  )


def test_missing_directory(tmp_path):
  with pytest.raises(cp.CheckpointError, match='does not exist'):
    cp.restore_params(tmp_path / 'nope', _like())


def test_directory_without_checkpoints(tmp_path):
  (tmp_path / 'checkpoints').mkdir()
  # An unfinished save (orbax's temporary directory) is not a checkpoint.
  (tmp_path / 'checkpoints' / '3.orbax-checkpoint-tmp-1').mkdir()
  with pytest.raises(cp.CheckpointError, match='no finished checkpoint'):
    cp.restore_params(tmp_path, _like())


def test_unknown_step_lists_the_steps(workdir):
  with pytest.raises(cp.CheckpointError, match=r'step 7.*\[1, 2\]'):
    cp.restore_params(workdir, _like(), step=7)


def test_shape_mismatch_names_the_parameter(workdir):
  like = _like()
  like['decoder']['w'] = jax.ShapeDtypeStruct(
      (8, 5), jnp.float32, sharding=like['decoder']['w'].sharding
  )
  with pytest.raises(cp.CheckpointMismatchError, match=r'decoder/w.*\(8, 4\)'):
    cp.restore_params(workdir, like)


def test_structure_mismatch_names_missing_and_extra(workdir):
  like = _like()
  like['head'] = like.pop('embed')
  with pytest.raises(cp.CheckpointMismatchError) as e:
    cp.restore_params(workdir, like)
  assert 'not in the checkpoint: head' in str(e.value)
  assert 'not in the model: embed' in str(e.value)


def test_a_non_trainer_checkpoint_is_refused(tmp_path):
  with ocp.StandardCheckpointer() as ckpt:  # an HF conversion's layout
    ckpt.save(tmp_path / 'ckpt' / '0' / 'items', _params(1))
  with pytest.raises(cp.CheckpointError, match="no 'state' item"):
    cp.restore_params(tmp_path / 'ckpt', _like())
