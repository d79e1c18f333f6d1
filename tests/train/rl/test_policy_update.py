"""One RL update on the real tiny MaxText MoE: signs, routing replay, router.

Two "rollouts" of one question are scored 1 and 0; their sampling logprobs
and routing come from the model itself (what the sampler records). After one
IcePop update with Muon, the rewarded rollout's logprob rises and the other
falls; the router is untouched; the learner's logprobs with the recorded
routing replayed match the recorded ones (step-0 parity), and a corrupted
routing record fails the parity check.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.model import config as model_config
from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.train import optim
from search_agent.train.rl import learner
from search_agent.train.rl import loop as loop_lib
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import parity
from search_agent.train.rl import policy_logprobs
from search_agent.train.rl import rollout_groups

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

T, PROMPT = 48, 16


@pytest.fixture(scope='module')
def model():
  cfg = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=T, logits_chunk=16,
      freeze_router=True,
  )  # fmt: skip
  return maxtext_model.build(
      cfg, families.layout_preset('fsdp'), devices=jax.devices()[:2],
      record_routing=True,
  )  # fmt: skip


N = 44  # rollout length (prompt lengths differ)


@pytest.fixture(scope='module')
def fns(model):
  """(jitted routing of a forward, jitted logprobs), compiled once."""

  def routing(params, toks):
    pos = jnp.broadcast_to(jnp.arange(toks.shape[1]), toks.shape)
    out = maxtext_model.forward(
        model.graphdef, params, model.rest, toks, pos, jnp.ones_like(toks)
    )
    return out.routing_bsle

  route = jax.jit(routing)

  def call_route(params, toks):
    with model.rules():
      return route(params, toks)

  return call_route, policy_logprobs.jitted_logprobs(model)


def _rollouts(model, fns, prompts=(PROMPT, PROMPT + 4)):
  """Random token sequences 'sampled' by the model: its logprobs, routing."""
  route, logprob = fns
  rng = np.random.default_rng(0)
  trajs = []
  for i, p in enumerate(prompts):
    n = N
    ids = rng.integers(3, 4000, n).astype(np.int32)
    r = route(model.params, jnp.asarray(ids[None, :-1]))
    lp = logprob(
        model.params, jnp.asarray(ids[None]), jnp.ones((1, n), jnp.int32),
        jnp.concatenate([r, r[:, -1:]], 1),
    )  # fmt: skip
    mask = (0,) * p + (1,) * (n - p)
    lps = np.where(np.array(mask) > 0, np.asarray(lp[0]), 0.0)
    trajs.append(
        rollout_groups.ScoredTrajectory(
            trajectory_id=f'r{i}',
            segments=(
                traj_lib.TokenRecord(
                    token_ids=tuple(int(x) for x in ids),
                    loss_mask=mask,
                    logprobs=tuple(float(x) for x in lps),
                    versions=tuple(0 if m else -1 for m in mask),
                    routed_experts=np.asarray(r[0]).tolist(),
                ),
            ),
            reward=1.0 - i,
            correct=1.0 - i,
        )
    )
  return rollout_groups.RolloutGroup(
      group_id='q@0', task_id='q', dispatch_batch=0, trajectories=tuple(trajs)
  )


def _sum_logprob(fn, params, mb, row):
  lp = fn(params, mb.tokens_bt, mb.valid_bt, mb.routing_btlk)
  return float((np.asarray(lp) * mb.batch.loss_mask_bt)[row].sum())


def test_update_raises_the_rewarded_rollout_and_freezes_the_router(model, fns):
  group = _rollouts(model, fns)
  (mb,) = learner.pack_update([group], seq_len=T, batch_size=2)
  assert mb.routing_btlk.shape == (2, T, 2, 2)
  fn = fns[1]
  cfg = loss_lib.PolicyLossConfig()
  report = parity.measure(fn, model.params, [mb], cfg)
  assert report['max_abs_logprob_diff'] < 1e-4
  assert report['icepop_mask_rate'] == 0.0
  assert report['routing_nonzero_entries'] > 0

  tx = optim.make_optimizer(
      optim.OptimizerConfig(
          nesterov=True, frozen=(model_config.ROUTER_PARAM_PATTERN,)
      ),
      2e-2, model.params, model.logical_axes,
  )  # fmt: skip
  acc = learner.GradientSums(policy_logprobs.make_logprob_fn(model), cfg)
  with model.rules():
    acc.add(model.params, [mb], version=0)
    opt_state = jax.jit(tx.init)(model.params)
  grads, m = acc.result()
  assert float(m['eligible_tokens']) == (N - PROMPT) + (N - PROMPT - 4)
  params, _, _ = loop_lib._apply_fn(model, tx)(  # pylint: disable=protected-access
      jax.tree.map(jnp.copy, model.params), opt_state, grads
  )
  before = [_sum_logprob(fn, model.params, mb, r) for r in (0, 1)]
  after = [_sum_logprob(fn, params, mb, r) for r in (0, 1)]
  assert after[0] > before[0]  # advantage +0.5
  assert after[1] < before[1]  # advantage -0.5
  gate = lambda p: p['decoder']['layers']['MoeBlock_0']['gate']['kernel']  # pylint: disable=g-long-lambda
  np.testing.assert_array_equal(gate(params), gate(model.params))


def test_parity_fails_on_a_corrupted_routing_record(model, fns, tmp_path):
  group = _rollouts(model, fns)
  (mb,) = learner.pack_update([group], seq_len=T, batch_size=2)
  fn = fns[1]
  cfg = loss_lib.PolicyLossConfig()
  pcfg = parity.ParityConfig(max_abs_logprob_diff=1e-3)
  shifted = dataclasses.replace(mb, routing_btlk=(mb.routing_btlk + 1) % 4)
  report = parity.measure(fn, model.params, [shifted], cfg)
  assert not parity.passed(tmp_path / 'parity.json')  # none on record yet
  with pytest.raises(parity.ParityError, match='max'):
    parity.check(report, pcfg, tmp_path / 'parity.json')
  assert not parity.passed(tmp_path / 'parity.json')  # checked again on resume
  parity.check(parity.measure(fn, model.params, [mb], cfg), pcfg,
               tmp_path / 'parity.json')  # fmt: skip
  assert parity.passed(tmp_path / 'parity.json')
  (tmp_path / 'cut.json').write_text('{"tokens": 12, "ok": tr')  # crashed
  assert not parity.passed(tmp_path / 'cut.json')
  zeros = dataclasses.replace(mb, routing_btlk=np.zeros_like(mb.routing_btlk))
  report = parity.measure(fn, model.params, [zeros], cfg)
  with pytest.raises(parity.ParityError, match='all zeros'):
    parity.check(report, dataclasses.replace(pcfg, max_abs_logprob_diff=1e9),
                 tmp_path / 'parity.json')  # fmt: skip


def test_parity_checks_generated_tokens_that_carry_no_loss(model, fns):
  """A first chunk of invalid turns only (loss mask 0) is still compared."""
  (mb,) = learner.pack_update([_rollouts(model, fns)], seq_len=T, batch_size=2)
  untrained = dataclasses.replace(
      mb,
      batch=mb.batch._replace(
          loss_mask_bt=np.zeros_like(mb.batch.loss_mask_bt)
      ),
  )
  cfg = loss_lib.PolicyLossConfig()
  report = parity.measure(fns[1], model.params, [untrained], cfg)
  assert report['tokens'] == (N - PROMPT) + (N - PROMPT - 4)
  assert report['max_abs_logprob_diff'] < 1e-4
  off = dataclasses.replace(
      untrained,
      batch=untrained.batch._replace(
          gen_logprobs_bt=untrained.batch.gen_logprobs_bt - 1
      ),
  )
  assert parity.measure(fns[1], model.params, [off], cfg)[
      'max_abs_logprob_diff'
  ] == pytest.approx(1.0, abs=1e-3)
