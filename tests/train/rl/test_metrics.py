"""RL metrics: what each update learned from (signal_summary)."""

from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import metrics
from search_agent.train.rl import rollout_groups


def _traj(name, reward, versions, mask):
  seg = traj_lib.TokenRecord(
      token_ids=tuple(range(len(versions))),
      loss_mask=tuple(mask),
      logprobs=(0.0,) * len(versions),
      versions=tuple(versions),
  )
  return rollout_groups.ScoredTrajectory(
      trajectory_id=name, segments=(seg,), reward=reward
  )


def _group(gid, *trajs):
  return rollout_groups.RolloutGroup(
      group_id=gid, task_id=gid, dispatch_batch=0, trajectories=trajs
  )


def test_trained_tokens_by_version_count_tokens_with_an_advantage():
  mixed = _group(
      'g0',
      # Prompt tokens (-1, mask 0) are not trained; an invalid turn's
      # sampled tokens (mask 0) neither.
      _traj('a', 1.0, (-1, -1, 0, 0, 1), (0, 0, 1, 1, 1)),
      _traj('b', 0.0, (-1, 1, 1, 1), (0, 1, 0, 1)),
  )
  flat = _group(  # all wrong: zero advantages, nothing trained
      'g1',
      _traj('c', 0.0, (-1, 2, 2), (0, 1, 1)),
      _traj('d', 0.0, (-1, 2, 2), (0, 1, 1)),
  )
  out = metrics.signal_summary([mixed, flat], adv_lib.AdvantageConfig())
  assert out == {
      'groups_with_advantage': 1,
      'trained_tokens_by_version': {'0': 2, '1': 3},
  }
