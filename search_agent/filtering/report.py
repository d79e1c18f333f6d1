"""The filtering report: what each stage removed, why, with examples.

`build_report` gives a JSON-ready dict; `render_markdown` a readable page
with the funnel, the removals per reason with examples, and the stats.
"""

import collections
import dataclasses
import json
from typing import Any, Sequence

from search_agent.agent import trajectory
from search_agent.filtering import inputs
from search_agent.filtering import judges
from search_agent.filtering import stage_result


def _example(
    r: stage_result.Removal, questions: dict[str, str]
) -> dict[str, str]:
  return {
      'traj_id': r.traj_id,
      'task_id': r.task_id,
      'question': judges.short(questions.get(r.traj_id, ''), 120),
      'detail': r.detail[:400],
  }


def _examples(
    removals: Sequence[stage_result.Removal], questions: dict[str, str], k: int
) -> dict[str, list[dict[str, str]]]:
  by_reason = collections.defaultdict(list)
  for r in removals:
    if len(by_reason[r.reason]) < k:
      by_reason[r.reason].append(_example(r, questions))
  return dict(by_reason)


def build_report(
    summary: inputs.InputSummary,
    trajs: Sequence[trajectory.Trajectory],
    results: Sequence[stage_result.StageResult],
    settings: dict[str, Any],
    examples_per_reason: int = 3,
) -> dict[str, Any]:
  """Assembles the report of one filtering run.

  Args:
    summary: What was read.
    trajs: The trajectories read (for questions in examples).
    results: Stage results in order.
    settings: The run's configuration, recorded as given.
    examples_per_reason: Examples quoted per removal reason.
  """
  questions = {t.id: t.question for t in trajs}
  stages = []
  for r in results:
    stages.append(
        {
            'name': r.name,
            'in': r.n_in,
            'kept': len(r.kept),
            'removed': len(r.removed),
            'errors': len(r.errors),
            'reasons': r.reasons(),
            'examples': _examples(r.removed, questions, examples_per_reason),
            'error_examples': _examples(
                r.errors, questions, examples_per_reason
            ),
            'stats': r.stats,
        }
    )
  final = results[-1].kept if results else ()
  return {
      'input': {
          **dataclasses.asdict(summary),
          'line_errors': [dataclasses.asdict(e) for e in summary.line_errors],
          'trajectories': len(trajs),
      },
      'stages': stages,
      'output': {
          'trajectories': len(final),
          'tasks': len({t.task_id for t in final}),
          'assistant_turns': sum(
              m.role == 'assistant' for t in final for m in t.messages
          ),
          'trainable_turns': sum(
              m.trainable for t in final for m in t.messages
          ),
      },
      'settings': settings,
  }


def _funnel(report: dict[str, Any]) -> list[str]:
  lines = [
      '| stage | in | kept | removed | errors | reasons |',
      '|---|---:|---:|---:|---:|---|',
  ]
  for s in report['stages']:
    reasons = ', '.join(f'{k}: {v}' for k, v in s['reasons'].items()) or '-'
    lines.append(
        f"| {s['name']} | {s['in']} | {s['kept']} | {s['removed']} |"
        f" {s['errors']} | {reasons} |"
    )
  return lines


def _input_lines(inp: dict[str, Any]) -> list[str]:
  lines = [
      f"- file: `{inp['path']}`",
      f"- lines: {inp['lines']}, trajectories read: {inp['trajectories']}"
      f" {inp['by_format']}, unreadable lines: {len(inp['line_errors'])}",
  ]
  for e in inp['line_errors'][:10]:
    lines.append(f"  - line {e['line_no']}: {e['reason'][:200]}")
  lines += [
      f"- tool calls: {inp['tool_calls']}; calls to unknown tools:"
      f" {inp['unknown_tool_calls'] or 'none'}",
      f"- parse problems in assistant turns: {inp['parse_errors'] or 'none'}",
  ]
  return lines


def render_markdown(report: dict[str, Any]) -> str:
  """A readable version of the report."""
  out = ['# Trajectory filtering report', '', '## Input', '']
  out += _input_lines(report['input'])
  out += ['', '## Funnel', '']
  out += _funnel(report)
  o = report['output']
  out += [
      '',
      f"Output: {o['trajectories']} trajectories over {o['tasks']} tasks;"
      f" {o['trainable_turns']} of {o['assistant_turns']} assistant turns"
      ' carry loss.',
  ]
  for s in report['stages']:
    out += ['', f"## {s['name']}", '']
    for kind, examples in (
        ('removed', s['examples']),
        ('error', s['error_examples']),
    ):
      for reason, items in examples.items():
        out.append(f'{kind} — **{reason}**:')
        for ex in items:
          out.append(f"- `{ex['traj_id']}` ({ex['question']}): {ex['detail']}")
    out.append('')
    out.append('```json')
    out.append(json.dumps(s['stats'], indent=1, ensure_ascii=False))
    out.append('```')
  return '\n'.join(out) + '\n'


def decisions(
    results: Sequence[stage_result.StageResult],
) -> list[dict[str, str]]:
  """One record per input trajectory: where it ended and why."""
  out = []
  for r in results:
    for outcome, items in (('removed', r.removed), ('error', r.errors)):
      for x in items:
        out.append(
            {
                'traj_id': x.traj_id,
                'task_id': x.task_id,
                'stage': r.name,
                'outcome': outcome,
                'reason': x.reason,
                'detail': x.detail,
            }
        )
  if results:
    for t in results[-1].kept:
      out.append(
          {
              'traj_id': t.id,
              'task_id': t.task_id,
              'stage': results[-1].name,
              'outcome': 'kept',
              'reason': '',
              'detail': '',
          }
      )
  return out
