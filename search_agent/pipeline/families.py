"""The main job's optional stage families, declared once.

A family is a run of stages the plan (plan.py) inserts into the configured
stages when its pipeline config section turns it on: RL's question pool
before RL, the in-pool check and its reach sets after RL's evaluation, one
SFT-RL climb before the report. `FAMILIES` says which stages, when and
where; plan.BUILDERS builds each stage.
"""

import dataclasses
from typing import Any, Callable

# One SFT-RL climb (Iris).
CLIMB_STAGES = ('climb_data', 'climb_sft', 'climb_rl', 'eval_after_climb')
# RL's pool of answerable train tasks.
POOL_STAGES = ('rl_probe', 'rl_pool')
# The in-pool check: the tasks RL trained on, scored with the SFT and the RL
# checkpoints.
SEEN_STAGES = ('rl_seen', 'eval_rl_seen_sft', 'eval_rl_seen_rl')
# How far RL's gain reaches: the SFT and RL checkpoints on other questions
# about the pages RL trained on ('siblings') and on train pages RL never
# drew ('untouched').
REACH_SETS = ('siblings', 'untouched')
REACH_STAGES = tuple(
    f'eval_rl_{s}_{m}' for s in REACH_SETS for m in ('sft', 'rl')
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Family:
  """Optional stages the plan inserts into `c.stages` when they are on.

  Attributes:
    stages: The stages to insert for config `c` (none: the family is off).
    needs: A stage that must be listed for the family to run ('' = none).
    after: The family goes right after the first of these that is listed.
    before: Without such a stage, right before the first of these that is
      listed; without either, at the end. A family stage already listed
      stays where it is.
  """

  stages: Callable[[Any], tuple[str, ...]]
  needs: str = ''
  after: tuple[str, ...] = ()
  before: tuple[str, ...] = ()

  def insert(self, c, names: list[str]) -> list[str]:
    """`names` with this family's stages inserted."""
    stages = self.stages(c)
    if not stages or (self.needs and self.needs not in names):
      return names
    at = len(names)
    if listed := [n for n in self.after if n in names]:
      at = names.index(listed[0]) + 1
    elif listed := [n for n in self.before if n in names]:
      at = names.index(listed[0])
    return names[:at] + [n for n in stages if n not in names] + names[at:]


FAMILIES = (
    # RL's question pool (rl_pool.enabled), before RL.
    Family(
        stages=lambda c: POOL_STAGES if c.rl_pool.enabled else (),
        needs='rl',
        before=('rl',),
    ),
    # The in-pool check (rl_seen.enabled) after RL's evaluation, with the
    # reach sets when rl_seen.reach > 0.
    Family(
        stages=lambda c: (
            SEEN_STAGES + (REACH_STAGES if c.rl_seen.reach else ())
            if c.rl_seen.enabled
            else ()
        ),
        needs='rl',
        after=('eval_after_rl', 'rl'),
    ),
    # One SFT-RL climb (climb.enabled), before the report.
    Family(
        stages=lambda c: CLIMB_STAGES if c.climb.enabled else (),
        before=('report',),
    ),
)
