"""Learning-rate schedules: linear warmup then cosine decay, or constant.

The open recipe's SFT schedule: 51 warmup updates to a 5e-5 peak, cosine decay
to 1e-6 through update 507. Its RL schedule is a constant 2e-6.
'warmup_constant' (the same warmup, then `peak` for good) is the tiny
pretraining's in `:learn`: copying (induction) formed there only at a step
size the cosine had already left behind. 'warmup_stable_decay' holds `peak`
after the warmup and spends the last `decay_steps` updates on a cosine down
to `minimum`: after 2,000 held updates, 500 decayed ones lowered the copy
probe (1.02 -> 0.75 nats) but not held-out pass@1 after SFT.
"""

import dataclasses

import jax.numpy as jnp
import optax

KINDS = ('warmup_cosine', 'warmup_constant', 'warmup_stable_decay', 'constant')


class ScheduleError(ValueError):
  """A schedule configuration is invalid."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
  """Learning-rate schedule over optimizer updates.

  Attributes:
    kind: 'warmup_cosine', 'warmup_constant', 'warmup_stable_decay' or
      'constant'.
    peak: Peak (or constant) learning rate.
    minimum: Final learning rate of the cosine decay.
    warmup_steps: Updates of linear warmup from 0 to `peak`.
    total_steps: Update at which the cosine reaches `minimum`.
    decay_steps: 'warmup_stable_decay' only: the cosine's length, ending at
      `total_steps` (the step is held at `peak` before it).
  """

  kind: str = 'warmup_cosine'
  peak: float = 5e-5
  minimum: float = 1e-6
  warmup_steps: int = 51
  total_steps: int = 507
  decay_steps: int = 0


def make_schedule(cfg: ScheduleConfig) -> optax.Schedule:
  """lr(step), step = number of updates already applied (0-based).

  Warmup: lr(s) = peak * (s + 1) / warmup for s < warmup, so the first update
  uses peak / warmup, never 0. Then lr(s) = min + (peak - min) *
  (1 + cos(pi * (s - start) / (total - start))) / 2, reaching `minimum` at
  s = total, where start = warmup ('warmup_cosine') or total - decay_steps
  ('warmup_stable_decay', `peak` from warmup to start).
  """
  if cfg.kind == 'constant':
    return optax.constant_schedule(cfg.peak)
  if cfg.kind not in KINDS:
    raise ScheduleError(
        f'schedule kind {cfg.kind!r} is unknown; use {"|".join(KINDS)}'
    )
  if not 0 <= cfg.warmup_steps < cfg.total_steps:
    raise ScheduleError(
        f'need 0 <= warmup_steps ({cfg.warmup_steps}) < total_steps'
        f' ({cfg.total_steps})'
    )
  start = cfg.warmup_steps
  if cfg.kind == 'warmup_stable_decay':
    start = cfg.total_steps - cfg.decay_steps
    if not cfg.warmup_steps <= start < cfg.total_steps:
      raise ScheduleError(
          f'need 0 < decay_steps ({cfg.decay_steps}) <= total_steps -'
          f' warmup_steps ({cfg.total_steps} - {cfg.warmup_steps})'
      )

  def lr(step):
    s = jnp.asarray(step, jnp.float32)
    warm = cfg.peak * (s + 1) / max(cfg.warmup_steps, 1)
    frac = jnp.clip((s - start) / (cfg.total_steps - start), 0, 1)
    cos = cfg.minimum + (cfg.peak - cfg.minimum) * 0.5 * (
        1 + jnp.cos(jnp.pi * frac)
    )
    if cfg.kind == 'warmup_constant':
      return jnp.where(s < cfg.warmup_steps, warm, cfg.peak)
    return jnp.where(s < cfg.warmup_steps, warm, cos)

  return lr
