"""Partial rollouts: request-level interruption, resume, spliced versions."""

import asyncio

import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import rollout_forest as rf


class FakeEngine:
  """Each request takes `steps` event-loop turns, then adds an assistant turn
  and an observation.

  Counting loop turns (not wall-clock sleeps) makes the order in which
  requests finish the same on a loaded machine.
  """

  def __init__(self, plan):
    self.plan = plan  # rollout id -> (turns needed, loop turns per request)
    self.turns = {r: 0 for r in plan}
    self.cancelled = []
    self.prefix_lengths = {}

  async def __call__(self, rid, prefix, version):
    need, steps = self.plan[rid]
    self.prefix_lengths.setdefault(rid, []).append(len(prefix.token_ids))
    try:
      for _ in range(steps):
        await asyncio.sleep(0)
    except asyncio.CancelledError:
      self.cancelled.append(rid)
      raise
    self.turns[rid] += 1
    k = self.turns[rid]
    return [
        rf.message_delta(
            [100 + k, 200 + k],
            trainable=True,
            logprobs=[-0.5, -0.5],
            version=version,
        ),
        rf.message_delta([300 + k], trainable=False),
    ], k == need


def test_forest_splices_deltas():
  f = rf.RolloutForest()
  root = f.add(-1, rf.message_delta([1, 2], trainable=False))
  a = f.add(
      root, rf.message_delta([3], trainable=True, logprobs=[-1.0], version=4)
  )
  b = f.add(
      root, rf.message_delta([5], trainable=True, logprobs=[-2.0], version=5)
  )  # a sibling branch
  rec = f.record(a)
  assert rec.token_ids == (1, 2, 3) and rec.loss_mask == (0, 0, 1)
  assert rec.versions == (-1, -1, 4) and rec.logprobs == (0.0, 0.0, -1.0)
  assert f.record(b).token_ids == (1, 2, 5)
  with pytest.raises(rf.ForestError):
    f.add(99, rec)


def test_interrupt_once_enough_finish_then_resume_from_committed_prefix():
  # slow0 commits one turn (loop turn 100) before fast2 finishes (150).
  plan = {
      'fast0': (1, 1),
      'fast1': (1, 1),
      'fast2': (1, 150),
      'slow0': (3, 100),
      'slow1': (2, 500),
  }
  engine = FakeEngine(plan)
  pr = rf.PartialRollouts(rf.RolloutForest(), engine)
  for r in plan:
    pr.start(r, rf.message_delta([1, 2, 3], trainable=False))
  done = asyncio.run(pr.run_step(version=0, target=3))
  assert sorted(done) == ['fast0', 'fast1', 'fast2']
  assert sorted(engine.cancelled) == ['slow0', 'slow1']  # request-level
  assert sorted(pr.heads) == ['slow0', 'slow1']
  # Nothing of a cancelled request was committed.
  assert engine.turns['slow1'] == 0
  assert len(pr.forest.record(pr.heads['slow1']).token_ids) == 3
  # Step 2 under version 1 resumes from the committed prefixes.
  done2 = asyncio.run(pr.run_step(version=1, target=2))
  assert sorted(done2) == ['slow0', 'slow1']
  assert engine.prefix_lengths['slow1'][:2] == [3, 3]  # restarted request
  rec = pr.trajectory('slow0')
  gen = [v for v, m in zip(rec.versions, rec.loss_mask) if m]
  assert gen[0] == 0 and gen[-1] == 1  # spliced across versions
  assert pr.interruptions == {'slow0': 1, 'slow1': 1}


def test_turn_failure_propagates_and_cancels_the_rest():
  async def turn(rid, prefix, version):
    if rid == 'bad':
      raise RuntimeError('engine died')
    await asyncio.sleep(1.0)
    return [], True

  pr = rf.PartialRollouts(rf.RolloutForest(), turn)
  for r in ('bad', 'ok'):
    pr.start(r, rf.message_delta([1], trainable=False))
  with pytest.raises(RuntimeError, match='engine died'):
    asyncio.run(pr.run_step(version=0, target=1))


def test_truncated_importance_sampling_on_a_spliced_prefix():
  # Tokens from versions 3 and 5 (learner at 6): learner/gen ratios
  # 3.0 (truncated to 2), 0.5, 1.0, 0.1 (TIS keeps 0.1; IcePop zeroes it).
  ratios = np.array([[3.0, 0.5, 1.0, 0.1]])
  gen = np.array([[-1.0, -1.0, -2.0, -2.0]], np.float32)
  lp = jnp.asarray(gen + np.log(ratios))
  batch = loss_lib.LossBatch(
      loss_mask_bt=np.ones((1, 4), np.int32),
      gen_logprobs_bt=gen,
      versions_bt=np.array([[3, 3, 5, 5]], np.int32),
      advantages_b=np.array([1.0], np.float32),
  )
  tis = loss_lib.loss_sums(
      lp, batch, 6, loss_lib.PolicyLossConfig(objective='tis')
  )
  want = np.sum(np.minimum(ratios, 2.0) * np.asarray(lp))
  assert float(tis.objective) == pytest.approx(want, rel=1e-5)
  assert float(tis.icepop_zeroed) == 1  # one truncated token
  ice = loss_lib.loss_sums(lp, batch, 6)
  want_ice = np.sum(np.where(ratios >= 0.2, ratios, 0) * np.asarray(lp))
  assert float(ice.objective) == pytest.approx(want_ice, rel=1e-5)
