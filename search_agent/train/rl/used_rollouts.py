"""The rollouts an RL run's applied updates used, and the climb's hand-off.

`consumed_rollouts` reads the rollouts of the groups the learner used (the
journal of the replay queue) from the workers' `rollouts-*.jsonl`; the
in-pool check (pipeline/rl_seen_job.py) and the climb read them. `handoff`
applies Iris's selection (`filtering.climb_selection.climb_select`: per
query in the pass band, the shortest correct rollout with enough tool turns)
and writes the SFT data as trajectory JSONL to
`<workdir>/climbing/sft_train.jsonl` with a `report.json` beside it;
`python -m search_agent.train.sft --config.data.format=trajectory
--config.data.train_path=<that file>` reads it.
"""

import json
import pathlib
from typing import Any

from search_agent.agent import trajectory as traj_lib
from search_agent.filtering import climb_selection
from search_agent.train.rl import replay_queue

OUT_DIR = 'climbing'
OUT_FILE = 'sft_train.jsonl'


def consumed_rollouts(
    workdir: str,
) -> tuple[list[traj_lib.Trajectory], dict[str, int]]:
  """Rollouts of the groups consumed by applied updates (latest copy), and
  which update consumed each group (group id -> update), the queue journal
  read once."""
  used = replay_queue.ReplayQueue(pathlib.Path(workdir) / 'queue').consumed()
  by_id = {}
  for path in sorted(pathlib.Path(workdir).glob('rollouts-*.jsonl')):
    for t in traj_lib.iter_jsonl(path, []):
      if t.meta.get('group_id') in used:
        by_id[t.id] = t
  return list(by_id.values()), used


def select(
    workdir: str, cfg: climb_selection.ClimbConfig
) -> tuple[list[traj_lib.Trajectory], Any]:
  """(the used rollouts, Iris's selection among them) of a run's workdir."""
  trajs = consumed_rollouts(workdir)[0]
  correct = {t.id: t.meta['reward']['correct'] >= 1.0 for t in trajs}
  return trajs, climb_selection.climb_select(trajs, correct, cfg)


def handoff(workdir: str, cfg: climb_selection.ClimbConfig) -> dict[str, Any]:
  """Selects and writes the SFT data; returns the report."""
  trajs, result = select(workdir, cfg)
  out = pathlib.Path(workdir) / OUT_DIR
  out.mkdir(parents=True, exist_ok=True)
  path = out / OUT_FILE
  traj_lib.write_jsonl(path, result.kept)
  report = {
      'rollouts': len(trajs),
      'selected': len(result.kept),
      'path': str(path),
      **result.stats,
  }
  (out / 'report.json').write_text(json.dumps(report, indent=1))
  return report
