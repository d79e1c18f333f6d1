"""The policy-gradient surrogate (IcePop + version mask) in JAX.

Open recipe, "Asynchronous Training":
  w_it   = pi_theta(a_it | h_it) / pi_gen(a_it | h_it)
  w~_it  = w_it * 1[0.2 <= w_it <= 5]                         (IcePop)
  m_it   = eligible assistant token and v - v_it <= 8         (version mask)
  L_PG   = - sum_it m_it sg(A_i w~_it) log pi_theta(a_it) / sum_it m_it
No PPO clip, no KL. The denominator counts every eligible token of the whole
optimizer update, including those IcePop zeroes, so `loss_sums` returns
UNNORMALIZED sums that the learner adds over microbatches and divides once.
`clipped_loss_sums` is SearchMaster's GRPO objective (asymmetric clip, k3 KL).

Arrays are [batch, time]; logprobs are aligned with tokens (position t holds
log p(token_t | tokens_<t)); versions hold -1 where nothing was generated.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

OBJECTIVES = ('icepop', 'tis', 'grpo_clip')


@dataclasses.dataclass(frozen=True, kw_only=True)
class PolicyLossConfig:
  """Policy loss constants.

  Attributes:
    icepop_low: Smallest importance weight kept by IcePop.
    icepop_high: Largest importance weight kept by IcePop.
    max_token_age: Largest v - v_t whose token still carries loss.
    age_bins: Token-age histogram bins: ages 0..age_bins-2, last = older.
    clip_low: GRPO variant: ratio clip 1 - clip_low.
    clip_high: GRPO variant: ratio clip 1 + clip_high.
    kl_coef: GRPO variant: weight of the k3 KL to the reference policy.
    objective: 'icepop' (the recipe), 'tis' (Iris: truncated importance
      sampling, w~ = min(w, tis_cap), for spliced partial-rollout prefixes)
      or 'grpo_clip' (SearchMaster; see `clipped_loss_sums`).
    tis_cap: Truncation cap of 'tis'.
  """

  icepop_low: float = 0.2
  icepop_high: float = 5.0
  max_token_age: int = 8
  age_bins: int = 18
  clip_low: float = 0.2
  clip_high: float = 0.28
  kl_coef: float = 0.001
  objective: str = 'icepop'
  tis_cap: float = 2.0

  def __post_init__(self):
    if self.objective not in OBJECTIVES:
      raise ValueError(
          f'objective must be one of {OBJECTIVES}, got {self.objective!r}'
      )


class LossBatch(NamedTuple):
  """One microbatch of packed trajectories.

  Attributes:
    loss_mask_bt: 1 for assistant tokens eligible for loss, else 0.
    gen_logprobs_bt: Sampling logprob recorded by the rollout worker.
    versions_bt: Policy version that generated each token (-1 if none).
    advantages_b: Advantage A_i of each trajectory.
  """

  loss_mask_bt: jax.Array
  gen_logprobs_bt: jax.Array
  versions_bt: jax.Array
  advantages_b: jax.Array


class LossSums(NamedTuple):
  """Unnormalized sums of one microbatch; add them, then `finalize`."""

  objective: jax.Array  # sum m * sg(A w~) * logp (the loss is -this / tokens)
  tokens: jax.Array  # sum m: eligible tokens (the shared denominator)
  icepop_zeroed: jax.Array  # eligible tokens IcePop zeroed (TIS: truncated)
  age_hist: jax.Array  # [age_bins] assistant tokens by age v - v_t
  abs_gap: jax.Array  # sum m |logp_theta - logp_gen|
  gap: jax.Array  # sum m (logp_gen - logp_theta)


def eligible_mask(
    batch: LossBatch, version: jax.Array | int, cfg: PolicyLossConfig
) -> jax.Array:
  """m_it: assistant tokens generated at most max_token_age versions ago."""
  age = version - batch.versions_bt
  fresh = (batch.versions_bt >= 0) & (age <= cfg.max_token_age)
  return (batch.loss_mask_bt > 0) & fresh


def icepop_weights(
    logprobs_bt: jax.Array, gen_logprobs_bt: jax.Array, cfg: PolicyLossConfig
) -> tuple[jax.Array, jax.Array]:
  """(w~, kept): w zeroed outside [icepop_low, icepop_high], no gradient."""
  w = jnp.exp(jax.lax.stop_gradient(logprobs_bt) - gen_logprobs_bt)
  kept = (w >= cfg.icepop_low) & (w <= cfg.icepop_high)
  return jnp.where(kept, w, 0.0), kept


def tis_weights(
    logprobs_bt: jax.Array, gen_logprobs_bt: jax.Array, cfg: PolicyLossConfig
) -> tuple[jax.Array, jax.Array]:
  """(min(w, tis_cap), untruncated): truncated IS, no gradient."""
  w = jnp.exp(jax.lax.stop_gradient(logprobs_bt) - gen_logprobs_bt)
  return jnp.minimum(w, cfg.tis_cap), w <= cfg.tis_cap


def _metrics(logprobs_bt, batch, version, m, kept, cfg):
  mf = m.astype(jnp.float32)
  lp = jax.lax.stop_gradient(logprobs_bt)
  age = jnp.clip(version - batch.versions_bt, 0, cfg.age_bins - 1)
  gen = (batch.loss_mask_bt > 0) & (batch.versions_bt >= 0)
  hist = (
      jnp.zeros(cfg.age_bins)
      .at[age.reshape(-1)]
      .add(gen.reshape(-1).astype(jnp.float32))
  )
  return dict(
      tokens=mf.sum(),
      icepop_zeroed=(mf * (~kept)).sum(),
      age_hist=hist,
      abs_gap=(mf * jnp.abs(lp - batch.gen_logprobs_bt)).sum(),
      gap=(mf * (batch.gen_logprobs_bt - lp)).sum(),
  )


def loss_sums(
    logprobs_bt: jax.Array,
    batch: LossBatch,
    version: jax.Array | int,
    cfg: PolicyLossConfig = PolicyLossConfig(),
) -> LossSums:
  """Unnormalized IcePop surrogate sums of one microbatch.

  Args:
    logprobs_bt: log pi_theta of each recorded token under the learner.
    batch: Masks, recorded sampling logprobs, versions and advantages.
    version: The learner's policy version v.
    cfg: Loss constants.
  """
  m = eligible_mask(batch, version, cfg)
  if cfg.objective == 'grpo_clip':
    raise ValueError('objective grpo_clip needs clipped_loss_sums')
  weights = icepop_weights if cfg.objective == 'icepop' else tis_weights
  w, kept = weights(logprobs_bt, batch.gen_logprobs_bt, cfg)
  coef = jax.lax.stop_gradient(batch.advantages_b[:, None] * w)
  objective = jnp.where(m, coef * logprobs_bt, 0.0).sum()
  return LossSums(
      objective=objective,
      **_metrics(logprobs_bt, batch, version, m, kept, cfg),
  )


def clipped_loss_sums(
    logprobs_bt: jax.Array,
    ref_logprobs_bt: jax.Array,
    batch: LossBatch,
    version: jax.Array | int,
    cfg: PolicyLossConfig = PolicyLossConfig(),
) -> LossSums:
  """SearchMaster GRPO: sum m [min(g A, clip(g) A) - kl_coef * k3].

  g = pi_theta / pi_old with pi_old the recorded sampling policy; k3 =
  exp(ref - logp) - (ref - logp) - 1 is the KL estimate to the reference.
  The same version mask and shared denominator apply.
  """
  m = eligible_mask(batch, version, cfg)
  ratio = jnp.exp(logprobs_bt - batch.gen_logprobs_bt)
  adv = batch.advantages_b[:, None]
  clipped = jnp.clip(ratio, 1 - cfg.clip_low, 1 + cfg.clip_high)
  surrogate = jnp.minimum(ratio * adv, clipped * adv)
  d = ref_logprobs_bt - logprobs_bt
  k3 = jnp.exp(d) - d - 1
  objective = jnp.where(m, surrogate - cfg.kl_coef * k3, 0.0).sum()
  kept = (ratio >= 1 - cfg.clip_low) & (ratio <= 1 + cfg.clip_high)
  return LossSums(
      objective=objective,
      **_metrics(logprobs_bt, batch, version, m, kept, cfg),
  )


def add_sums(a: LossSums, b: LossSums) -> LossSums:
  return jax.tree.map(jnp.add, a, b)


def finalize(sums: LossSums) -> dict[str, jax.Array]:
  """Loss and metrics of a whole update from its accumulated sums."""
  n = jnp.maximum(sums.tokens, 1.0)
  return dict(
      loss=-sums.objective / n,
      eligible_tokens=sums.tokens,
      icepop_mask_rate=sums.icepop_zeroed / n,
      logprob_abs_gap=sums.abs_gap / n,
      logprob_gap=sums.gap / n,
      age_hist=sums.age_hist,
  )
