"""Iris partial rollouts in the loop: gate, hold/abort, resume, splice, TIS."""

import asyncio
import json
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.llm import protocol
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import partial
from search_agent.train.rl import weight_sync

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position


class VersionedLLM:
  """Harness wiring: tokens stamped with the store's newest version.

  `abort()` makes the call in flight return early with finish_reason
  'abort' (what the rollout server does); `slow_s` keeps calls in flight.
  """

  name = 'scripted'

  def __init__(self, store, slow_s=0.0):
    self.store, self.slow_s = store, slow_s
    self.calls, self._abort = [], asyncio.Event()

  async def abort(self):
    self._abort.set()

  async def chat(self, messages, params):
    prompt = tuple(messages)  # token ids stand in for messages here
    v = self.store.latest_version()
    try:
      await asyncio.wait_for(self._abort.wait(), self.slow_s or 1e-3)
      self._abort.clear()
      reason, ids = 'abort', (7,)
    except asyncio.TimeoutError:
      reason, ids = 'stop', (10 + v, 11 + v)
    self.calls.append((prompt, v, reason))
    return [
        protocol.Completion(
            text='', finish_reason=reason, token_ids=ids,
            logprobs=tuple(-1.5 - v for _ in ids), policy_version=v,
            prompt_token_ids=prompt,
        )
    ]  # fmt: skip


def _store(tmp_path):
  store = weight_sync.WeightStore(tmp_path / 'weights')
  store.publish({'w': jnp.zeros(2)}, 0)
  return store


def test_held_between_requests_then_resumed_and_spliced(tmp_path):
  store = _store(tmp_path)
  gate = partial.InterruptGate(str(tmp_path), store, poll_s=0.01)
  llm = VersionedLLM(store)
  policy = partial.PartialPolicy(llm, gate)

  async def run():
    (c1,) = await policy.chat((1, 2), None)
    # The learner has its groups: hold until it publishes version 1.
    partial.write_interrupt(str(tmp_path), 1)
    prompt2 = (1, 2) + c1.token_ids + (3,)
    second = asyncio.create_task(policy.chat(prompt2, None))
    await asyncio.sleep(0.2)
    assert not second.done() and len(llm.calls) == 1  # held
    store.publish({'w': jnp.ones(2)}, 1)
    return await second

  (c2,) = asyncio.run(run())
  assert c2.policy_version == 1 and policy.interruptions == 1
  rec = policy.record()
  assert rec.token_ids == (1, 2, 10, 11, 3, 11, 12)
  assert rec.versions == (-1, -1, 0, 0, -1, 1, 1)
  assert rec.loss_mask == (0, 0, 1, 1, 0, 1, 1)
  assert policy.meta()['spliced_versions'] == [0, 1]
  # Truncated IS on the spliced record, learner at version 1: the resumed
  # tokens are on-policy (w = 1); the prefix sampled by version 0 gets
  # min(pi_1 / pi_0, cap).
  cfg = loss_lib.PolicyLossConfig(objective='tis', tis_cap=2.0)
  learner_lp = np.array([0.0, 0.0, -0.1, -3.0, 0.0, -2.5, -2.5])
  w, kept = loss_lib.tis_weights(
      jnp.asarray(learner_lp), jnp.asarray(rec.logprobs), cfg
  )
  gen = np.asarray(rec.loss_mask, bool)
  np.testing.assert_allclose(
      np.asarray(w)[gen], [2.0, np.exp(-1.5), 1.0, 1.0], rtol=1e-6
  )
  assert list(np.asarray(kept)[gen]) == [False, True, True, True]


def test_server_request_aborted_and_resent_under_the_new_version(tmp_path):
  store = _store(tmp_path)
  gate = partial.InterruptGate(str(tmp_path), store, poll_s=0.01)
  llm = VersionedLLM(store, slow_s=0.5)
  policy = partial.PartialPolicy(llm, gate, abort=llm.abort)

  async def run():
    call = asyncio.create_task(policy.chat((1, 2), None))
    await asyncio.sleep(0.05)
    partial.write_interrupt(str(tmp_path), 1)  # mid-request
    await asyncio.sleep(0.2)
    store.publish({'w': jnp.ones(2)}, 1)
    return await call

  (c,) = asyncio.run(run())
  assert [r for _, _, r in llm.calls] == ['abort', 'stop']
  assert c.policy_version == 1 and c.token_ids == (11, 12)
  assert policy.interruptions >= 1 and policy.dropped_tokens == 1
  assert policy.record().token_ids == (1, 2, 11, 12)  # partial output dropped


def test_a_restarted_learner_clears_a_stale_hold(tmp_path):
  store = _store(tmp_path)
  gate = partial.InterruptGate(str(tmp_path), store)
  partial.write_interrupt(str(tmp_path), 5)
  assert gate.active()
  store.publish({'w': jnp.ones(2)}, 5)
  assert not gate.active()
  partial.write_interrupt(str(tmp_path), 6)
  partial.clear_interrupt(str(tmp_path))
  assert not gate.active()


@pytest.mark.maxtext
@pytest.mark.slow
def test_partial_tiny_run_holds_and_resumes(tmp_path):
  """:partial,tiny end to end: synchronous steps over-sampled, held rollouts."""
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  args = [a for a in rl_run.SMALL if not a.startswith('--config=')]
  with open(log, 'wb') as out:
    proc = subprocess.run(
        [sys.executable, '-m', 'search_agent.train.rl.run',
         '--config=tpu_configs/rl.py:partial,tiny', *args,
         '--config.scheduler.oversample=0.5', '--config.max_updates=2',
         f'--workdir={workdir}'],
        cwd=rl_run.REPO, stdout=out, stderr=subprocess.STDOUT, timeout=900,
        check=False,
    )  # fmt: skip
  assert proc.returncode == 0, rl_run.log_tail(log)
  recs = rl_run.metrics(workdir)
  assert [r['policy_version'] for r in recs] == [1, 2]
  assert all('interruptions' in r and 'spliced_rollouts' in r for r in recs)
  manifest = json.loads((workdir / 'manifest.json').read_text())
  assert manifest['config']['loss']['objective'] == 'tis'
  assert manifest['config']['scheduler']['synchronous']
  # The learner held the rollouts once each update had its groups.
  hold = json.loads((workdir / 'learner' / 'interrupt.json').read_text())
  assert hold['until_version'] == 2
  # Every rollout carries its partial-rollout record; a held one resumed
  # under a version newer than its group's dispatch.
  rollouts = [
      json.loads(l)
      for l in (workdir / 'rollouts-w0.jsonl').read_text().splitlines()
  ]
  assert rollouts and all('partial' in r['meta'] for r in rollouts)
  for r in rollouts:
    p = r['meta']['partial']
    gen = [v for v, m in zip(r['tokens']['versions'], r['tokens']['loss_mask'])
           if m]  # fmt: skip
    assert p['spliced_versions'] == sorted(set(gen))
