"""A run (one directory of a workdir) as rows, details and a summary.

Everything a directory holds about one trajectory or task is joined by id
(joins.py): the trajectory line, its eval result (verdict, judge reason),
its filter decision (kept/removed, stage, reason), its scored group (reward,
advantage, policy versions) and its task (reference, required claims,
evidence graph). `rows` are light (the list page); `detail(i)` builds one
item's full view on demand.
"""

import dataclasses
import pathlib
from typing import Any, Callable

from search_agent.viewer import graph
from search_agent.viewer import joins
from search_agent.viewer import run_files
from search_agent.viewer import sniff
from search_agent.viewer import summaries
from search_agent.viewer import trajectories

Json = dict[str, Any]
Items = tuple[list[Json], Callable[[int], Json]]


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
    return {
        'id': self.id,
        'kinds': self.kinds,
        'summary': self.summary,
        'n': len(self.rows),
        'errors': self.errors[:50],
    }


def _trajectory_items(d: joins.RunData) -> Items:
  keys = list(d.trajs)
  by_traj = run_files.latest_by(d.decisions, 'traj_id')
  rows = []
  for i, k in enumerate(keys):
    t = d.trajs[k]
    task = d.tasks.get(str(t.get('task_id')))
    rows.append(
        _traj_row(
            i, t, d.results.get(k), by_traj.get(k), d.rewards.get(k), task
        )
    )

  def detail(i: int) -> Json:
    t, dec, rew = d.trajs[keys[i]], by_traj.get(keys[i]), d.rewards.get(keys[i])
    task = d.tasks.get(str(t.get('task_id')))
    extra = {
        'type': 'trajectory',
        'grade': joins.grade(d.results.get(keys[i])),
        'filter': dec,
        'reward': rew,
        'task': joins.task_brief(task),
        'claims': joins.claims(task, rew),
        'encrypted': bool(t.get('encrypted')),
        'decrypted': bool(t.get('decrypted')),
    }
    out = trajectories.detail(t, extra, removed=joins.removed(dec, rew))
    if task:  # '' when the task names no pages
      out['task_graph'] = graph.svg(task, trajectories.seen_titles(out))
    return out

  return rows, detail


def _task_items(d: joins.RunData) -> Items:
  """Tasks (joined with their decision), then decisions that made no task.

  A decision names its task by `task_id`, or (synthesis) by the proposal
  the task records in `meta.proposal`.
  """
  keys = list(d.tasks)
  by_task = run_files.latest_by(d.decisions, 'task_id')
  by_proposal = run_files.latest_by(d.decisions, 'proposal')

  def decision(t: Json) -> Json | None:
    prop = str((t.get('meta') or {}).get('proposal', ''))
    return by_task.get(str(t['id'])) or by_proposal.get(prop)

  rows = [
      _task_row(i, d.tasks[k], decision(d.tasks[k])) for i, k in enumerate(keys)
  ]
  used = {id(decision(t)) for t in d.tasks.values()}
  others = [x for x in d.decisions if isinstance(x, dict) and id(x) not in used]
  others = [
      x for x in others if not x.get('task_id') or x['task_id'] not in d.tasks
  ]
  for x in others:
    rows.append(_decision_row(len(rows), x))

  def detail(i: int) -> Json:
    if i >= len(keys):
      x = others[i - len(keys)]
      return {
          'type': 'decision',
          'question': x.get('question', ''),
          'decision': x,
      }
    t = d.tasks[keys[i]]
    return {
        'type': 'task',
        **joins.task_brief(t),
        'decision': decision(t),
        'graph_svg': graph.svg(t),
        'meta': t.get('meta', {}),
    }

  return rows, detail


def _group_items(d: joins.RunData) -> Items:
  rows = [_group_row(i, g) for i, g in enumerate(d.groups)]

  def detail(i: int) -> Json:
    trajs = [
        {k: v for k, v in t.items() if k != 'tokens'}
        | {'reward_view': d.rewards.get(str(t.get('trajectory_id')))}
        for t in d.groups[i]['trajectories']
    ]
    return {'type': 'group', **d.groups[i], 'trajectories': trajs}

  return rows, detail


def load(rf: sniff.RunFiles, workdir: pathlib.Path, canary: str | None) -> Run:
  """Reads one directory into a Run."""
  d = joins.read(rf, canary)
  if d.trajs:
    rows, detail = _trajectory_items(d)
  elif d.tasks:
    rows, detail = _task_items(d)
  else:
    rows, detail = _group_items(d)
  summary = summaries.build(
      rows=rows,
      report=d.report,
      manifest=d.manifest,
      funnel=d.funnel,
      results=list(d.results.values()),
      metrics=d.metrics,
      trajs=d.trajs,
      rewards=d.rewards,
  )
  summary['images'] = d.images
  summary['json'].update(d.extra_json)
  kinds = sniff.KINDS + ('consumed', 'report', 'manifest', 'funnel')
  return Run(
      id=str(rf.path.relative_to(workdir))
      if rf.path != workdir
      else workdir.name,
      kinds=[k for k in kinds if rf.get(k)],
      summary=summary,
      rows=rows,
      errors=d.errors,
      detail=detail,
  )


def _verdict(res: Json | None) -> str:
  if not res:
    return ''
  if res.get('correct') is None:
    return 'judge error' if res.get('judge_error') else 'ungraded'
  return 'correct' if res['correct'] else 'wrong'


def _traj_row(i, t, res, dec, rew, task) -> Json:
  row = {
      'i': i,
      'id': str(t.get('id', '')),
      'task_id': str(t.get('task_id', '')),
      'question': t.get('question', ''),
      'status': t.get('status', ''),
      'answer': t.get('final_answer') or '',
      'tools': sum(trajectories.tool_counts(t).values()),
      'steps': (t.get('meta') or {}).get(
          'steps',
          sum(m.get('role') == 'assistant' for m in trajectories.messages(t)),
      ),
  }
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
  if t.get('decrypted'):
    row['decrypted'] = True
  return row


def _outcome(dec: Json) -> str:
  return str(dec.get('outcome', dec.get('decision', '')))


def _task_row(i, t, dec) -> Json:
  meta = t.get('meta') or {}
  row = {
      'i': i,
      'id': t['id'],
      'question': t.get('question', ''),
      'answer': t.get('answer', ''),
      'claims': len(t.get('claims', ()) or ()),
      'hops': meta.get('hops', ''),
      'split': t.get('_split', '') or meta.get('split', ''),
  }
  if dec:
    row.update(outcome=_outcome(dec), reason=dec.get('reason', ''))
  return row


def _decision_row(i, dec) -> Json:
  """A decision without a task (e.g. a proposal the controller returned)."""
  return {
      'i': i,
      'id': str(
          dec.get('proposal', dec.get('task_id', dec.get('traj_id', '')))
      ),
      'question': dec.get('question', ''),
      'hops': dec.get('hops', ''),
      'outcome': _outcome(dec),
      'reason': dec.get('reason', ''),
  }


def _group_row(i, g) -> Json:
  rs = g['_rewards']
  return {
      'i': i,
      'id': str(g.get('group_id', '')),
      'task_id': str(g.get('task_id', '')),
      'question': '',
      'rollouts': len(rs),
      'reward': sum(rs) / len(rs) if rs else None,
  }
