"""Dr. GRPO advantages, dynamic sampling, the second-pass rule."""

import numpy as np
import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import rollout_groups


def _group(rows, gid='g'):
  tok = traj_lib.TokenRecord(
      token_ids=(1,), loss_mask=(1,), logprobs=(0.0,), versions=(0,)
  )
  return rollout_groups.RolloutGroup(
      group_id=gid,
      task_id='t',
      dispatch_batch=0,
      trajectories=tuple(
          rollout_groups.ScoredTrajectory(
              trajectory_id=f'{gid}{i}',
              segments=(tok,),
              reward=0.6 * y + 0.4 * c,
              correct=y,
              coverage=c,
          )
          for i, (y, c) in enumerate(rows)
      ),
  )


def test_mean_subtracted_no_std():
  # r = [1.0, 0.8, 0.4, 0.0] -> mean 0.55
  a = adv_lib.group_advantages([1.0, 0.8, 0.4, 0.0])
  np.testing.assert_allclose(a, [0.45, 0.25, -0.15, -0.55])


def test_std_normalized_grpo_variant():
  cfg = adv_lib.AdvantageConfig(normalize_std=True)
  a = adv_lib.group_advantages([1.0, 0.0, 0.0, 0.0], cfg)
  std = np.sqrt(0.1875)
  np.testing.assert_allclose(
      a, [0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std], rtol=1e-5
  )


def test_dynamic_sampling_drops_all_zero_groups_only():
  same = _group([(1, 1.0)] * 4, 'same')
  all_correct_diff_cov = _group([(1, 1.0), (1, 0.5), (1, 1.0), (1, 1.0)], 'cov')
  all_wrong_same = _group([(0, 0.5)] * 4, 'wrong')
  kept, dropped = adv_lib.keep_groups(
      [same, all_correct_diff_cov, all_wrong_same]
  )
  assert [g.group_id for g in kept] == ['cov']
  assert [g.group_id for g in dropped] == ['same', 'wrong']


def test_group_signal_under_std_normalization():
  cfg = adv_lib.AdvantageConfig(normalize_std=True)
  # Equal rewards: (r - mean) / (0 + eps) is 0, not a signal.
  assert not adv_lib.group_has_signal([0.2, 0.2, 0.2, 0.2], cfg)
  assert adv_lib.group_has_signal([0.2, 0.36, 0.2, 0.2], cfg)
  assert adv_lib.group_has_signal([1.0, 0.0], adv_lib.AdvantageConfig())


def test_second_pass_rule():
  assert not adv_lib.needs_second_pass(_group([(1, 1.0)] * 4))
  # all correct but incomplete coverage: still eligible
  assert adv_lib.needs_second_pass(_group([(1, 1.0)] * 3 + [(1, 0.5)]))
  assert adv_lib.needs_second_pass(_group([(0, 1.0)] * 4))


def test_empty_rewards_rejected():
  with pytest.raises(ValueError, match='non-empty'):
    adv_lib.group_advantages([])
