"""Routing record, router replay and the frozen-router option."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import config
from search_agent.model import logprobs
from search_agent.train import optim
from search_agent.train.sft import step as step_lib

pytestmark = pytest.mark.maxtext


def _inputs(t=128, seed=3):
  rng = np.random.default_rng(seed)
  toks = jnp.asarray(rng.integers(0, 4096, (2, t)), jnp.int32)
  pos = jnp.broadcast_to(jnp.arange(t), (2, t))
  return toks, pos, jnp.ones_like(toks)


def _logprobs(model, forced=None):
  toks, pos, seg = _inputs()
  with model.rules():
    fn = jax.jit(
        lambda p, f: logprobs.token_logprobs(model, p, toks, pos, seg, toks, f)
    )
    lp, out = fn(model.params, forced)
  return np.asarray(lp), out.routing_bsle


def test_routing_record_shape_and_range(model1):
  _, routing = _logprobs(model1)
  cfg = model1.mt_config
  assert routing.shape == (
      2,
      128,
      cfg.num_decoder_layers,
      cfg.num_experts_per_tok,
  )
  r = np.asarray(routing)
  assert r.min() >= 0 and r.max() < cfg.num_experts
  # top-k experts of a token are distinct
  assert np.all(r[..., 0] != r[..., 1])


def test_replayed_logprobs_equal_recorded_ones(model1):
  lp, routing = _logprobs(model1)
  lp_replay, routing_replay = _logprobs(model1, routing)
  np.testing.assert_array_equal(lp_replay, lp)
  np.testing.assert_array_equal(routing_replay, routing)
  # Other routes give other log-probs: the forced routes are really used.
  shifted = (routing + 1) % model1.mt_config.num_experts
  lp_other, _ = _logprobs(model1, shifted)
  assert np.abs(lp_other - lp).max() > 1e-3
  # Routing is per layer: changing only the last layer changes the output.
  last = routing.at[:, :, -1].set(shifted[:, :, -1])
  lp_last, _ = _logprobs(model1, last)
  assert np.abs(lp_last - lp).max() > 1e-3


def test_frozen_router_is_not_updated(model1):
  cfg = optim.OptimizerConfig(frozen=(config.ROUTER_PARAM_PATTERN,))
  tx = optim.make_optimizer(cfg, 1e-2, model1.params, model1.logical_axes)
  params = jax.tree.map(jnp.copy, model1.params)
  opt_state = step_lib.init_opt_state(model1, tx, params)
  toks, pos, seg = _inputs()
  batch = {
      'inputs': toks[None],
      'targets': toks[None],
      'positions': pos[None],
      'segment_ids': seg[None],
      'loss_mask': seg[None],
  }
  step = step_lib.make_train_step(model1, tx)
  new, _, metrics = step(params, opt_state, batch)
  moe_old = model1.params['decoder']['layers']['MoeBlock_0']
  moe_new = new['decoder']['layers']['MoeBlock_0']
  np.testing.assert_array_equal(
      moe_new['gate']['kernel'], moe_old['gate']['kernel']
  )
  assert np.abs(moe_new['wi_0'] - moe_old['wi_0']).max() > 0
  assert metrics['grad_norm'] > 0
