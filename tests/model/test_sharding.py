"""Expert x tensor x context parallelism on 8 simulated CPU devices."""

import jax
from jax.sharding import PartitionSpec as P
import numpy as np
import pytest

from search_agent.model import mesh as mesh_lib
from search_agent.train.sft import step as step_lib

pytestmark = pytest.mark.maxtext


def _packed_batch(vocab, m=2, b=2, t=128, seed=0):
  """Two packed segments per row; loss on the second half of each."""
  rng = np.random.default_rng(seed)
  cut = t // 3
  seg = np.where(np.arange(t) < cut, 1, 2)
  pos = np.where(np.arange(t) < cut, np.arange(t), np.arange(t) - cut)
  mask = ((pos >= 4) & (np.arange(t) < t - 5)).astype(np.int32)
  shape = (m, b, t)
  return {
      'inputs': rng.integers(0, vocab, shape).astype(np.int32),
      'targets': rng.integers(0, vocab, shape).astype(np.int32),
      'positions': np.broadcast_to(pos, shape).astype(np.int32),
      'segment_ids': np.broadcast_to(seg, shape).astype(np.int32),
      'loss_mask': np.broadcast_to(mask, shape).astype(np.int32),
  }


def test_layout_resolves_and_rejects():
  lay = mesh_lib.Parallelism(fsdp=-1, expert=2, tensor=2)
  assert lay.sizes(8) == {
      'data': 1,
      'fsdp': 2,
      'expert': 2,
      'tensor': 2,
      'context': 1,
  }
  recipe = mesh_lib.Parallelism(fsdp=1, expert=8, tensor=2, context=8)
  assert recipe.sizes(128)['context'] == 8
  with pytest.raises(mesh_lib.LayoutError, match='uses 128 devices'):
    recipe.sizes(64)
  with pytest.raises(mesh_lib.LayoutError, match='only one axis'):
    mesh_lib.Parallelism(fsdp=-1, data=-1).sizes(8)


def test_one_rule_per_logical_name(model8):
  names = [name for name, _ in model8.mt_config.logical_axis_rules]
  assert len(names) == len(set(names))
  used = {a for _, axes in model8.mt_config.logical_axis_rules for a in axes}
  assert used <= set(mesh_lib.MESH_AXES)


def test_expert_weights_sharded_as_the_rules_say(model8):
  moe = model8.params['decoder']['layers']['MoeBlock_0']
  specs = {k: v.sharding.spec for k, v in moe.items() if k != 'gate'}
  specs['gate'] = moe['gate']['kernel'].sharding.spec
  print('\nexpert weight PartitionSpecs on mesh', dict(model8.mesh.shape))
  for k, s in sorted(specs.items()):
    print(f'  MoeBlock_0/{k}: {s}')
  # wi: [exp, layers, embed_moe, mlp_moe]; wo: [exp, layers, mlp_moe, embed_moe]
  assert specs['wi_0'] == P('expert', None, 'context', 'tensor')
  assert specs['wi_1'] == P('expert', None, 'context', 'tensor')
  assert specs['wo'] == P('expert', None, 'tensor', 'context')
  # router: [embed, layers, experts]; embed over fsdp(1) x context x expert.
  assert specs['gate'] == P(('context', 'expert'), None, None)
  q = model8.params['decoder']['layers']['self_attention']['query']['kernel']
  assert q.sharding.spec == P(('context', 'expert'), None, 'tensor', None)


def test_sharded_loss_and_grads_equal_single_device(model1, model8):
  batch = _packed_batch(model1.config.vocab_size)

  def run(model, params):
    with model.rules():
      fn = jax.jit(lambda p, b: step_lib.accumulate_grads(model, p, b, 0.0))
      b = jax.device_put(batch, step_lib.batch_sharding(model))
      return jax.device_get(fn(params, b))

  g1, m1 = run(model1, model1.params)
  shardings = jax.tree.map(lambda x: x.sharding, model8.params)
  g8, m8 = run(model8, jax.device_put(model1.params, shardings))
  # float32; only the reduction order differs between the two layouts.
  np.testing.assert_allclose(m8['nll'], m1['nll'], rtol=1e-5)
  assert m8['tokens'] == m1['tokens'] == np.sum(batch['loss_mask'])
  flat1 = jax.tree_util.tree_leaves_with_path(g1)
  flat8 = dict(jax.tree_util.tree_leaves_with_path(g8))
  for path, a in flat1:
    np.testing.assert_allclose(
        flat8[path], a, rtol=1e-4, atol=1e-6, err_msg=str(path)
    )
