"""Everything one directory holds, read and keyed by trajectory or task id.

`read` loads a run's files (see sniff.py for how they are found) into
`RunData`: trajectories (a filtering run's removed ones from its input file
too), eval results, filter or synthesis decisions, tasks (the eval's own
task file when the manifest names one), scored groups turned into per-
trajectory rewards and advantages, and per-step metrics. The helpers below
join one item's records for its detail view.
"""

import base64
import dataclasses
import pathlib
import re
from typing import Any

from search_agent.viewer import run_files
from search_agent.viewer import sniff

Json = dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class RunData:
  """A run's records (plain JSON objects), keyed for joins."""

  report: Any
  manifest: Json | None
  funnel: Any
  trajs: dict[str, Json]
  results: dict[str, Json]
  decisions: list[Json]
  tasks: dict[str, Json]
  rewards: dict[str, Json]
  groups: list[Json]
  metrics: list[Json]
  errors: list[str]
  images: dict[str, str] = dataclasses.field(default_factory=dict)
  extra_json: dict[str, Any] = dataclasses.field(default_factory=dict)


_MAX_IMAGE_BYTES = 2 << 20


def _images(path: pathlib.Path) -> dict[str, str]:
  """PNG figures a binary wrote beside its data (funnel.png), as data URIs."""
  out = {}
  for f in sorted(path.glob('*.png')):
    if f.stat().st_size <= _MAX_IMAGE_BYTES:
      out[f.name] = (
          'data:image/png;base64,' + base64.b64encode(f.read_bytes()).decode()
      )
  return out


def _lines(paths, errors: list[str]) -> list[Any]:
  return [o for p in paths for o in run_files.json_lines(p, errors)]


def read(rf: sniff.RunFiles, canary: str | None) -> RunData:
  """Reads a run's files (decrypting in memory only when given `canary`)."""
  errors = list(rf.unreadable)

  def one(kind: str) -> Any:
    return (
        run_files.read_json(rf.get(kind)[0], errors) if rf.get(kind) else None
    )

  report, manifest = one('report'), one('manifest')
  if manifest is None and isinstance(report, dict):
    manifest = report.get('manifest')
  paths = filter_input(rf, report) + rf.get('trajectories')
  trajs = run_files.trajectories(paths, canary, errors)
  tasks = run_files.tasks(rf.get('tasks'), errors)
  tasks = tasks or manifest_tasks(manifest, errors)
  if trajs and tasks:  # dataset order (parallel runs append in any order)
    order = {k: n for n, k in enumerate(tasks)}
    rank = lambda kv: order.get(str(kv[1].get('task_id')), len(order))
    trajs = dict(sorted(trajs.items(), key=rank))
  used = consumed(rf.get('consumed'), errors)
  by_traj, groups = rewards(rf.get('groups'), errors, used)
  for k, r in meta_rewards(trajs).items():  # claim votes live only here
    by_traj[k] = {**r, **by_traj.get(k, {}), 'claim_votes': r['claim_votes']}
    if 'advantage' not in by_traj[k]:
      by_traj[k].update(advantage=None, advantage_how='no scored group found')
  extra = {p.name: run_files.read_json(p, errors) for p in rf.get('json')}
  return RunData(
      report=report,
      manifest=manifest,
      funnel=one('funnel'),
      trajs=trajs,
      results=run_files.latest_by(_lines(rf.get('results'), errors), 'traj_id'),
      decisions=_lines(rf.get('decisions'), errors),
      tasks=tasks,
      rewards=by_traj,
      groups=groups,
      metrics=_lines(rf.get('metrics'), errors),
      errors=errors,
      images=_images(rf.path),
      extra_json=extra,
  )


def manifest_tasks(manifest: Json | None, errors: list[str]) -> dict[str, Json]:
  """The task file a run's manifest names, when it is still on disk.

  An eval's `dataset.path` (format 'tasks'), an RL run's `tasks.path` or
  `config.tasks_path`.
  """
  m = manifest if isinstance(manifest, dict) else {}
  ds, tasks, config = (m.get(k) or {} for k in ('dataset', 'tasks', 'config'))
  candidates = [
      ds.get('path') if ds.get('format') == 'tasks' else None,
      tasks.get('path') if isinstance(tasks, dict) else None,
      config.get('tasks_path') if isinstance(config, dict) else None,
  ]
  for c in candidates:
    if isinstance(c, str) and c and pathlib.Path(c).is_file():
      return run_files.tasks([pathlib.Path(c)], errors)
  return {}


def meta_rewards(trajs: dict[str, Json]) -> dict[str, Json]:
  """Rewards a rollout worker wrote into each trajectory (`meta.reward`)."""
  out = {}
  for k, t in trajs.items():
    r = (t.get('meta') or {}).get('reward')
    if isinstance(r, dict) and 'total' in r:
      out[k] = {
          'reward': r['total'],
          'correct': r.get('correct'),
          'coverage': r.get('coverage'),
          'claim_votes': r.get('claim_votes'),
          'group_id': (t.get('meta') or {}).get('group_id'),
      }
  return out


def consumed(paths, errors: list[str]) -> dict[str, Json]:
  """Group id -> {'update', 'dropped'} from the replay queue's journal."""
  out: dict[str, Json] = {}
  for line in _lines(paths, errors):
    if not isinstance(line, dict):
      continue
    for gid in line.get('groups') or ():
      out[str(gid)] = {'update': line.get('update'), 'dropped': False}
    for gid in line.get('dropped') or ():
      out[str(gid)] = {'update': line.get('update'), 'dropped': True}
  return out


def rewards(
    group_paths, errors: list[str], used: dict[str, Json] | None = None
) -> tuple[dict[str, Json], list[Json]]:
  """Per trajectory id: reward, advantage, group, update; and the groups."""
  by_traj, groups = {}, []
  used = used or {}
  for p in group_paths:
    objs = (
        run_files.json_lines(p, errors)
        if p.suffix == '.jsonl'
        else [run_files.read_json(p, errors)]
    )
    for g in objs:
      if not isinstance(g, dict) or 'trajectories' not in g:
        continue
      ts = [t for t in g['trajectories'] if isinstance(t, dict)]
      rs = [float(t.get('reward', 0.0)) for t in ts]
      mean = sum(rs) / len(rs) if rs else 0.0
      groups.append({**g, '_rewards': rs})
      for t, r in zip(ts, rs):
        adv, how = t.get('advantage'), 'recorded'
        if adv is None:
          adv, how = r - mean, 'r - group mean (Dr. GRPO), recomputed here'
        by_traj[str(t.get('trajectory_id', ''))] = {
            'reward': r,
            'advantage': adv,
            'advantage_how': how,
            'correct': t.get('correct'),
            'coverage': t.get('coverage'),
            'claim_votes': t.get('claim_votes'),
            'group_id': g.get('group_id'),
            'group_rewards': rs,
            'versions': _versions(t.get('tokens') or {}),
            'update': used.get(str(g.get('group_id')), {}).get('update'),
            'dropped': used.get(str(g.get('group_id')), {}).get('dropped'),
        }
  return by_traj, groups


def _versions(tokens: Json) -> dict[str, int]:
  out: dict[str, int] = {}
  for v, m in zip(tokens.get('versions', ()), tokens.get('loss_mask', ())):
    if m:
      out[str(v)] = out.get(str(v), 0) + 1
  return out


_REASONING = re.compile(
    r'(?:^|\n)\**reasoning\**:\**\s*(.*?)(?=\n\**\w+\**:|\Z)', re.DOTALL | re.I
)


def grade(res: Json | None) -> Json | None:
  """The eval record, with the judge's `reasoning:` field pulled out."""
  if not res or not res.get('judge_response'):
    return res
  m = _REASONING.search(res['judge_response'])
  return {**res, 'judge_reasoning': m.group(1).strip() if m else ''}


def claims(task: Json | None, reward: Json | None) -> list[Json]:
  votes = (reward or {}).get('claim_votes') or []
  out = []
  for k, c in enumerate((task or {}).get('claims', ()) or ()):
    est = None if k >= len(votes) else bool(votes[k])
    out.append({**c, 'established': est})
  return out


def removed(dec: Json | None, reward: Json | None = None) -> str:
  """Why a whole trajectory carries no loss ('' when nothing says so)."""
  if reward and reward.get('dropped'):
    return (
        f'its group was dropped by dynamic sampling (all advantages zero)'
        f' at update {reward.get("update")}'
    )
  if not dec or dec.get('outcome', 'kept') == 'kept':
    return ''
  return f'{dec.get("outcome")} at {dec.get("stage", "?")}: {dec.get("reason", "")}'


def filter_input(rf: sniff.RunFiles, report: Json | None) -> list[pathlib.Path]:
  """A filtering run's input file (its removed trajectories live there)."""
  inp = (
      ((report or {}).get('input') or {}).get('path')
      if isinstance(report, dict)
      else None
  )
  if not rf.get('decisions') or not inp or not pathlib.Path(inp).is_file():
    return []
  return (
      [pathlib.Path(inp)]
      if pathlib.Path(inp) not in rf.get('trajectories')
      else []
  )


def task_brief(task: Json | None) -> Json | None:
  if not task:
    return None
  keep = ('id', 'question', 'answer', 'aliases', 'evidence', 'claims', '_split')
  return {k: task[k] for k in keep if k in task}
