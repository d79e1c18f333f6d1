"""ConfigDict (tpu_configs/rl.py) -> the RL library's frozen dataclasses.

Binaries call these at the edge; library code never reads a ConfigDict.
"""

import ml_collections

from search_agent.rewards import claims as claims_lib
from search_agent.rewards import judging
from search_agent.rewards import outcome
from search_agent.rewards import searchmaster
from search_agent.train.rl import advantages as adv_lib
from search_agent.train.rl import loss as loss_lib
from search_agent.train.rl import rollout_times
from search_agent.train.rl import scheduler as sched_lib
from search_agent.train.rl import simulator


def reward_weights(c: ml_collections.ConfigDict) -> outcome.RewardWeights:
  return outcome.RewardWeights(
      correct=c.reward.correct_weight, coverage=c.reward.coverage_weight
  )


def claim_voting(c: ml_collections.ConfigDict) -> claims_lib.ClaimVoting:
  r = c.reward
  return claims_lib.ClaimVoting(
      select_calls=r.select_calls,
      select_min_votes=r.select_min_votes,
      judge_calls=r.judge_calls,
      judge_min_votes=r.judge_min_votes,
      sampling=judging.JudgeSampling(temperature=r.judge_temperature),
  )


def searchmaster_rewards(
    c: ml_collections.ConfigDict,
) -> searchmaster.SearchMasterRewards:
  return searchmaster.SearchMasterRewards(**c.searchmaster.to_dict())


def advantage_config(c: ml_collections.ConfigDict) -> adv_lib.AdvantageConfig:
  return adv_lib.AdvantageConfig(normalize_std=c.normalize_std)


def loss_config(c: ml_collections.ConfigDict) -> loss_lib.PolicyLossConfig:
  """The policy loss; 'grpo_clip' selects `loss.clipped_loss_sums`."""
  l = c.loss
  return loss_lib.PolicyLossConfig(
      icepop_low=l.icepop_low,
      icepop_high=l.icepop_high,
      max_token_age=l.max_token_age,
      clip_low=l.clip_low,
      clip_high=l.clip_high,
      kl_coef=l.kl_coef,
      objective=l.objective,
      tis_cap=c.rollout.tis_cap,
  )


def scheduler_config(
    c: ml_collections.ConfigDict,
) -> sched_lib.SchedulerConfig:
  return sched_lib.SchedulerConfig(**c.scheduler.to_dict())


def sim_config(c: ml_collections.ConfigDict) -> simulator.SimConfig:
  """The scheduler and sim sections as a SimConfig."""
  s = c.sim
  return simulator.SimConfig(
      cluster=simulator.ClusterConfig(
          generation_nodes=s.generation_nodes,
          group_slots_per_node=s.group_slots_per_node,
          training_nodes=s.training_nodes,
          learner_node_minutes_per_group=s.learner_node_minutes_per_group,
          apply_minutes=s.apply_minutes,
          turn_minutes=s.turn_minutes,
      ),
      times=rollout_times.GroupTimes(
          median_min=s.median_minutes, p99_min=s.p99_minutes
      ),
      scheduler=scheduler_config(c),
      updates=s.updates,
      zero_signal_prob=s.zero_signal_prob,
      max_token_age=c.loss.max_token_age,
      seed=s.seed,
  )
