"""The SFT data of one SFT-RL climb (Iris): RL's selected rollouts + demos.

`train.rl.run` with `climbing.enabled` writes one rollout per query in the
pass band (the shortest correct one with enough tool turns,
`filtering/climbing.py`). Iris distils those back into the policy before the
next RL round; at tiny scale a few dozen rollouts alone would pull the model
off everything else it learned, so the pipeline mixes in the teacher
demonstrations of the first SFT pass by default. Byte-identical message
sequences are dropped (`filtering.selection.dedup_filter`), the selected
rollouts first. The binary is `search_agent.pipeline.climb_data`.
"""

import json
import os

from search_agent.agent import trajectory as traj_lib
from search_agent.filtering import selection


class ClimbDataError(ValueError):
  """The climb has nothing to train on, or an input is missing."""


def merge(selected: str, demonstrations: str, workdir: str) -> dict:
  """Writes workdir/train.jsonl and climb.json; returns the counts."""
  if not os.path.exists(selected):
    raise ClimbDataError(
        f'{selected} does not exist: run the RL stage with'
        ' --config.climbing.enabled=True (the pipeline does when'
        ' climb.enabled)'
    )
  picked = list(traj_lib.iter_jsonl(selected))  # a bad line raises
  demos = list(traj_lib.iter_jsonl(demonstrations)) if demonstrations else []
  result = selection.dedup_filter(picked + demos)
  if not result.kept:
    raise ClimbDataError(
        f'{selected} holds no rollout (no query in the pass band) and no'
        ' demonstrations are mixed in: nothing to train the climb on'
    )
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, 'train.jsonl')
  tmp = path + '.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    for t in result.kept:
      f.write(json.dumps(t.to_json(), ensure_ascii=False) + '\n')
  os.replace(tmp, path)
  picked_ids = {t.id for t in picked}
  counts = {
      'selected': len(picked),
      'demonstrations': len(demos),
      'duplicates': len(picked) + len(demos) - len(result.kept),
      'train': len(result.kept),
      'train_selected': sum(t.id in picked_ids for t in result.kept),
  }
  with open(os.path.join(workdir, 'climb.json'), 'w', encoding='utf-8') as f:
    json.dump(counts, f, indent=1)
  return counts
