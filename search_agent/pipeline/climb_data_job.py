"""The SFT data of one SFT-RL climb (Iris): RL's selected rollouts + demos.

From a finished RL stage's workdir (the rollouts of the groups its updates
used, `train/rl/used_rollouts.py`), one rollout per query in the pass
band is selected: the shortest correct one with enough tool turns
(`filtering/climb_selection.py`). Iris distils those back into the policy
before the next RL round; at tiny scale a few dozen rollouts alone would pull the model
off everything else it learned, so the pipeline mixes in the teacher
demonstrations of the first SFT pass by default. Byte-identical message
sequences are dropped (`filtering.selection.dedup_filter`), the selected
rollouts first. The binary is `search_agent.pipeline.climb_data`.
"""

import json
import os

from search_agent.agent import trajectory as traj_lib
from search_agent.filtering import climb_selection
from search_agent.filtering import selection
from search_agent.train.rl import used_rollouts


class ClimbDataError(ValueError):
  """The climb has nothing to train on, or an input is missing."""


def merge(
    rl_workdir: str,
    demonstrations: str,
    workdir: str,
    band: climb_selection.ClimbConfig = climb_selection.ClimbConfig(),
) -> dict:
  """Writes workdir/train.jsonl and climb.json; returns the counts."""
  if not os.path.isdir(os.path.join(rl_workdir, 'queue')):
    raise ClimbDataError(
        f'{rl_workdir} is not a train.rl.run workdir (no queue/): the climb'
        ' selects from a finished RL run'
    )
  used, chosen = used_rollouts.select(rl_workdir, band)
  picked = list(chosen.kept)
  # a bad line raises: nothing is dropped silently
  demos = list(traj_lib.iter_jsonl(demonstrations)) if demonstrations else []
  result = selection.dedup_filter(picked + demos)
  if not result.kept:
    raise ClimbDataError(
        f'{rl_workdir}: no query of its {len(used)} used rollouts is in the'
        ' pass band and no demonstrations are mixed in: nothing to train'
        ' the climb on'
    )
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, 'train.jsonl')
  traj_lib.write_jsonl(path, result.kept)
  picked_ids = {t.id for t in picked}
  counts = {
      'rollouts': len(used),
      'queries': chosen.stats['queries'],
      'band': chosen.stats['config'],
      'selected': len(picked),
      'demonstrations': len(demos),
      'duplicates': len(picked) + len(demos) - len(result.kept),
      'train': len(result.kept),
      'train_selected': sum(t.id in picked_ids for t in result.kept),
  }
  with open(os.path.join(workdir, 'climb.json'), 'w', encoding='utf-8') as f:
    json.dump(counts, f, indent=1)
  return counts
