"""The RL binary end to end (--role=all): a 1-update pulse in a temp dir."""

import json
import pathlib
import sys

import jax
import numpy as np
import pytest

from search_agent.model import checkpoint_params
from search_agent.model import maxtext_model
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import inputs as sft_inputs
from tpu_configs import sft as sft_configs

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

FIELDS = (
    'update', 'policy_version', 'reward_mean', 'outcome_reward_mean',
    'claim_reward_mean', 'icepop_mask_rate', 'token_age_hist', 'logprob_gap',
    'groups_used',
)  # fmt: skip


# Cooler than 1: the learner must score at the sampler's temperature, or the
# step-0 parity check stops the run.
COOL = '--config.rollout.temperature=0.7'


def test_one_update_pulse(tmp_path):
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  proc = rl_run.start(workdir, '--config.max_updates=1', COOL, log=log)
  assert proc.wait(timeout=900) == 0, rl_run.log_tail(log)
  (rec,) = rl_run.metrics(workdir)
  assert all(k in rec for k in FIELDS)
  assert (rec['update'], rec['policy_version'], rec['groups_used']) == (1, 1, 2)
  assert rec['tokens_past_age_limit'] == 0
  parity = json.loads((workdir / 'parity.json').read_text())
  assert parity['ok'] and parity['max_abs_logprob_diff'] < 0.01
  assert parity['routing_nonzero_entries'] > 0
  manifest = json.loads((workdir / 'manifest.json').read_text())
  assert manifest['judge']['name'] == 'deterministic'
  assert manifest['role'] == 'all'
  assert (workdir / 'reward_curves.png').stat().st_size > 0
  assert list((workdir / 'tb').iterdir())
  assert sorted(p.name for p in (workdir / 'weights').iterdir()) == ['0', '1']
  # Every used group came through the durable queue, journaled once.
  journal = (workdir / 'queue' / 'consumed.jsonl').read_text().splitlines()
  assert [json.loads(l)['update'] for l in journal] == [0]
  # A rerun asking for one more update continues the finished run (the old
  # done marker must not stop its rollout worker before the learner starts).
  proc = rl_run.start(workdir, '--config.max_updates=2', COOL, log=log)
  assert proc.wait(timeout=900) == 0, rl_run.log_tail(log)
  assert [r['update'] for r in rl_run.metrics(workdir)] == [1, 2]
  # The pipeline's SFT-RL climb starts train.sft from this workdir: SFT's
  # reader takes the RL checkpoint's parameters as its own model's.
  cfg = sft_config.from_config_dict(sft_configs.get_config('tiny'))
  like = maxtext_model.build(
      cfg.model, cfg.layout, devices=jax.devices()[:1]
  ).params
  params, step = sft_inputs.init_params(str(workdir), like)
  assert step == 2
  assert jax.tree.structure(params) == jax.tree.structure(like)
  mine, _ = checkpoint_params.restore_params(str(workdir), like)
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(mine)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
