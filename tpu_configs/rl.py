"""The open recipe's RL stage (plus SearchMaster's GRPO variant as options).

Usage: --config=tpu_configs/rl.py (the recipe), tpu_configs/rl.py:tiny (a
2-core CPU run), :searchmaster (std-normalized advantages, clipped objective
with KL 0.001) or :searchmaster,tiny. Every value below is from open-recipe.md unless its
comment says otherwise.
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the RL config; arg: comma-separated variants (see above)."""
  c = ml_collections.ConfigDict()
  # Group size (rollouts per question) and reward weights r = 0.6 y + 0.4 c.
  c.group_size = 4
  c.reward = ml_collections.ConfigDict(
      dict(
          correct_weight=0.6,
          coverage_weight=0.4,
          select_calls=5,  # required-claim selection calls per task
          select_min_votes=3,
          judge_calls=7,  # coverage judgments per final report
          judge_min_votes=5,
          judge_temperature=1.0,  # our choice: "independently sampled"
      )
  )
  # SearchMaster proposer/solver rewards (used by self-play runs).
  c.searchmaster = ml_collections.ConfigDict(
      dict(
          r0=0.2, depth_horizon=10, oop_alpha=1.5, oop_beta=2.5, oop_lambda=0.5
      )
  )
  # Advantages: Dr. GRPO (mean only); True = SearchMaster's std-normalized.
  c.normalize_std = False
  # Policy loss: 'icepop' (recipe) or 'grpo_clip' (SearchMaster).
  c.loss = ml_collections.ConfigDict(
      dict(
          objective='icepop',  # or 'tis' (Iris) or 'grpo_clip' (SearchMaster)
          icepop_low=0.2,
          icepop_high=5.0,
          max_token_age=8,
          clip_low=0.2,  # grpo_clip only
          clip_high=0.28,  # grpo_clip only
          kl_coef=0.0,  # recipe: 0; SearchMaster: 0.001
      )
  )
  # Ready-first scheduling.
  c.scheduler = ml_collections.ConfigDict(
      dict(
          groups_per_update=32,
          start_after_ready=8,
          dispatch_batch_groups=32,
          admission_window=8,
      )
  )
  # Rollouts (the agent issue consumes these).
  c.rollout = ml_collections.ConfigDict(
      dict(
          max_agent_steps=500,
          max_tokens_per_call=32_768,
          context_limit=262_144,
          temperature=1.0,
          top_p=1.0,
          tis_cap=2.0,  # our choice: truncated IS cap for spliced prefixes
      )
  )
  # Optimizer (the learner issue consumes these).
  c.optimizer = ml_collections.ConfigDict(
      dict(
          name='muon',
          learning_rate=2e-6,
          weight_decay=0.1,
          momentum=0.9,
          nesterov=True,
          spectral_multiplier=0.2,
      )
  )
  # Simulator of the schedule (search_agent/train/rl/simulate.py).
  c.sim = ml_collections.ConfigDict(
      dict(
          generation_nodes=7,
          group_slots_per_node=6,  # our choice: 42 groups = 168 rollouts
          training_nodes=10,
          learner_node_minutes_per_group=1.5,  # our choice: 9 s per group
          apply_minutes=1.0,  # our choice: optimizer step + weight broadcast
          turn_minutes=0.5,  # our choice: one assistant request
          median_minutes=23.6,
          p99_minutes=91.7,
          updates=50,  # 50 x 32 = the seed's 1,600 groups
          oversample=0.25,  # synchronous+partial only (Iris headroom)
          zero_signal_prob=0.0,
          seed=0,
      )
  )
  variants = set(arg.split(',')) if arg else set()
  unknown = variants - {'tiny', 'searchmaster'}
  if unknown:
    raise ValueError(
        f'unknown variant(s) {sorted(unknown)}; want tiny and/or searchmaster'
    )
  if 'searchmaster' in variants:  # SearchMaster's GRPO (searchmaster.md)
    c.group_size = 8  # K_P = K_S = 8
    c.normalize_std = True
    c.loss.update(dict(objective='grpo_clip', kl_coef=0.001))
  if 'tiny' in variants:
    c.scheduler.update(
        dict(
            groups_per_update=4,
            start_after_ready=2,
            dispatch_batch_groups=4,
            admission_window=2,
        )
    )
    c.sim.update(
        dict(
            generation_nodes=1,
            group_slots_per_node=6,
            updates=2,
            training_nodes=1,
        )
    )
  return c
