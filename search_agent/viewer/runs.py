"""A run (one directory of a workdir) joined into rows, details and a summary.

Everything a directory holds about one trajectory or task is joined by id:
the trajectory line, its eval result (verdict, judge reason), its filter
decision (kept/removed, stage, reason), its scored group (reward, advantage,
policy versions) and its task (reference, required claims, evidence graph).
`rows` are light (the list page); `detail(i)` builds one item's full view.
"""

import dataclasses
import pathlib
from typing import Any, Callable

from search_agent.viewer import graph
from search_agent.viewer import records
from search_agent.viewer import sniff
from search_agent.viewer import summaries
from search_agent.viewer import trajectories

Json = dict[str, Any]


@dataclasses.dataclass(kw_only=True)
class Run:
  """One run as the page shows it.

  Attributes:
    id: Its path relative to the workdir ('.' for the workdir itself).
    kinds: The sniffed file kinds it holds.
    summary: Headline figures, bar charts, tables and raw JSON (manifest...).
    rows: One light record per trajectory (or task, or group).
    errors: Lines and files that could not be read.
    detail: Index -> the full view of rows[index].
  """

  id: str
  kinds: list[str]
  summary: Json
  rows: list[Json]
  errors: list[str]
  detail: Callable[[int], Json]

  def header(self) -> Json:
    return {'id': self.id, 'kinds': self.kinds, 'summary': self.summary,
            'n': len(self.rows), 'errors': self.errors[:50]}  # fmt: skip


def _verdict(res: Json | None) -> str:
  if not res:
    return ''
  if res.get('correct') is None:
    return 'judge error' if res.get('judge_error') else 'ungraded'
  return 'correct' if res['correct'] else 'wrong'


def _manifest_tasks(
    manifest: Json | None, errors: list[str]
) -> dict[str, Json]:
  """The eval's own task file (format 'tasks') when it is still on disk."""
  ds = (manifest or {}).get('dataset', {})
  path = pathlib.Path(ds.get('path', '') or '/nonexistent')
  if ds.get('format') != 'tasks' or not path.is_file():
    return {}
  return records.tasks([path], errors)


def _rewards(
    group_paths, errors: list[str]
) -> tuple[dict[str, Json], list[Json]]:
  """Per trajectory id: reward, advantage, group; and the groups."""
  by_traj, groups = {}, []
  for p in group_paths:
    objs = (
        records.json_lines(p, errors)
        if p.suffix == '.jsonl'
        else [records.read_json(p, errors)]
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
            'reward': r, 'advantage': adv, 'advantage_how': how,
            'correct': t.get('correct'), 'coverage': t.get('coverage'),
            'claim_votes': t.get('claim_votes'),
            'group_id': g.get('group_id'), 'group_rewards': rs,
            'versions': _versions(t.get('tokens') or {}),
        }  # fmt: skip
  return by_traj, groups


def _versions(tokens: Json) -> dict[str, int]:
  out: dict[str, int] = {}
  for v, m in zip(tokens.get('versions', ()), tokens.get('loss_mask', ())):
    if m:
      out[str(v)] = out.get(str(v), 0) + 1
  return out


def _claims(task: Json | None, reward: Json | None) -> list[Json]:
  votes = (reward or {}).get('claim_votes') or []
  out = []
  for k, c in enumerate((task or {}).get('claims', ()) or ()):
    est = None if k >= len(votes) else bool(votes[k])
    out.append({**c, 'established': est})
  return out


def _removed(dec: Json | None) -> str:
  if not dec or dec.get('outcome', 'kept') == 'kept':
    return ''
  return f'{dec.get("outcome")} at {dec.get("stage", "?")}: {dec.get("reason", "")}'


def load(rf: sniff.RunFiles, workdir: pathlib.Path, canary: str | None) -> Run:
  """Reads one directory into a Run."""
  errors = list(rf.unreadable)
  one = (
      lambda kind: records.read_json(rf.get(kind)[0], errors)
      if rf.get(kind)
      else None
  )
  report, manifest, funnel = one('report'), one('manifest'), one('funnel')
  manifest = manifest or (report or {}).get('manifest')
  trajs = records.trajectories(
      _filter_input(rf, report) + rf.get('trajectories'), canary, errors
  )
  results = records.latest_by(
      (o for p in rf.get('results') for o in records.json_lines(p, errors)),
      'traj_id',
  )
  decisions = [
      o for p in rf.get('decisions') for o in records.json_lines(p, errors)
  ]
  dec_by_traj = records.latest_by(decisions, 'traj_id')
  tasks = records.tasks(rf.get('tasks'), errors) or _manifest_tasks(
      manifest, errors
  )
  rewards, groups = _rewards(rf.get('groups'), errors)
  metrics = [
      o for p in rf.get('metrics') for o in records.json_lines(p, errors)
  ]
  run_id = (
      str(rf.path.relative_to(workdir)) if rf.path != workdir else workdir.name
  )
  kinds = [
      k for k in sniff.KINDS + ('report', 'manifest', 'funnel') if rf.get(k)
  ]
  if trajs and tasks:  # dataset order (parallel runs append in any order)
    order = {k: n for n, k in enumerate(tasks)}
    trajs = dict(
        sorted(
            trajs.items(),
            key=lambda kv: order.get(str(kv[1].get('task_id')), len(order)),
        )
    )
  if trajs:
    rows = [_traj_row(i, t, results.get(k), dec_by_traj.get(k), rewards.get(k), tasks.get(str(t.get('task_id'))))
            for i, (k, t) in enumerate(trajs.items())]  # fmt: skip
    keys = list(trajs)

    def detail(i: int) -> Json:
      t = trajs[keys[i]]
      task = tasks.get(str(t.get('task_id')))
      dec, rew = dec_by_traj.get(keys[i]), rewards.get(keys[i])
      extra = {'type': 'trajectory', 'grade': results.get(keys[i]), 'filter': dec,
               'reward': rew, 'task': _task_brief(task), 'claims': _claims(task, rew),
               'encrypted': bool(t.get('encrypted')), 'decrypted': bool(t.get('decrypted'))}  # fmt: skip
      return trajectories.detail(t, extra, removed=_removed(dec))

  elif tasks:
    dec_by_task = records.latest_by(decisions, 'task_id')
    keys = list(tasks)
    rows = [
        _task_row(i, tasks[k], dec_by_task.get(k)) for i, k in enumerate(keys)
    ]

    def detail(i: int) -> Json:
      t = tasks[keys[i]]
      return {'type': 'task', **_task_brief(t), 'decision': dec_by_task.get(keys[i]),
              'graph_svg': graph.svg(t), 'meta': t.get('meta', {})}  # fmt: skip

  else:
    rows = [_group_row(i, g) for i, g in enumerate(groups)]

    def detail(i: int) -> Json:
      return {'type': 'group', **groups[i], 'trajectories': [
          {k: v for k, v in t.items() if k != 'tokens'} | {'reward_view': rewards.get(str(t.get('trajectory_id')))}
          for t in groups[i]['trajectories']]}  # fmt: skip

  summary = summaries.build(
      rows=rows, report=report, manifest=manifest, funnel=funnel,
      results=list(results.values()), decisions=decisions, metrics=metrics,
      trajs=trajs,
  )  # fmt: skip
  return Run(
      id=run_id,
      kinds=kinds,
      summary=summary,
      rows=rows,
      errors=errors,
      detail=detail,
  )


def _filter_input(
    rf: sniff.RunFiles, report: Json | None
) -> list[pathlib.Path]:
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


def _task_brief(task: Json | None) -> Json | None:
  if not task:
    return None
  keep = ('id', 'question', 'answer', 'aliases', 'evidence', 'claims', '_split')
  return {k: task[k] for k in keep if k in task}


def _traj_row(i, t, res, dec, rew, task) -> Json:
  row = {
      'i': i, 'id': str(t.get('id', '')), 'task_id': str(t.get('task_id', '')),
      'question': t.get('question', ''), 'status': t.get('status', ''),
      'answer': t.get('final_answer') or '',
      'tools': sum(trajectories.tool_counts(t).values()),
      'steps': (t.get('meta') or {}).get('steps', sum(m.get('role') == 'assistant' for m in t.get('messages', ()))),
  }  # fmt: skip
  if res:
    row.update(
        verdict=_verdict(res), tools=res.get('n_tool_calls', row['tools'])
    )
  if task:
    row['reference'] = task.get('answer', '')
  if dec:
    row.update(
        outcome=dec.get('outcome', ''),
        stage=dec.get('stage', ''),
        reason=dec.get('reason', ''),
    )
  if rew:
    row.update(reward=rew['reward'], advantage=rew['advantage'])
    if rew.get('correct') is not None and 'verdict' not in row:
      row['correct'] = rew['correct']
  if t.get('encrypted'):
    row['encrypted'] = True
  return row


def _task_row(i, t, dec) -> Json:
  row = {'i': i, 'id': t['id'], 'question': t.get('question', ''),
         'answer': t.get('answer', ''), 'claims': len(t.get('claims', ()) or ()),
         'split': t.get('_split', '')}  # fmt: skip
  if dec:
    row.update(
        outcome=dec.get('outcome', dec.get('decision', '')),
        reason=dec.get('reason', ''),
    )
  return row


def _group_row(i, g) -> Json:
  rs = g['_rewards']
  return {'i': i, 'id': str(g.get('group_id', '')), 'task_id': str(g.get('task_id', '')),
          'question': '', 'rollouts': len(rs),
          'reward': sum(rs) / len(rs) if rs else None}  # fmt: skip
