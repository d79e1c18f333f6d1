"""BrowseComp-Plus's own output files, from an eval's trajectories and records.

In the layout of texttron/BrowseComp-Plus, so its scripts and leaderboard
read them:
  * `runs/run_<query_id>.json` (repeat r > 0: `run_<query_id>_r<r>.json`),
    one per rollout: `metadata` {model, output_dir, max_tokens},
    `query_id`, `tool_call_counts`, `status` ('completed' for an answered
    run, else our status), `retrieved_docids` (what search returned),
    `result`: the turns as `{type, tool_name, arguments, output}` items
    (`reasoning`, `tool_call`, and last the final `output_text`);
  * `evaluation_summary.json` as `evaluate_run.py` writes it: `LLM`,
    `Accuracy (%)`, `Recall (%)`, `avg_tool_stats`, `Calibration Error (%)`
    (0.0 under 100 answers, as theirs), `Retriever`, `Link`, `Evaluation
    Date`, `per_query_metrics`;
  * `detailed_judge_results.csv` with its columns.
For encrypted queries only `evaluation_summary.json` is written (the run
files and the CSV would hold answer text on disk).
"""

import csv
import datetime
import json
import pathlib
from typing import Any, Mapping, Sequence

from search_agent.agent import trajectory
from search_agent.evaluation import metrics
from search_agent.evaluation import results

SUMMARY = 'evaluation_summary.json'
DETAILS = 'detailed_judge_results.csv'
RUNS = 'runs'
CSV_FIELDS = (
    'query_id', 'predicted_answer', 'correct_answer', 'judge_correct',
    'confidence', 'is_completed', 'parse_error', 'json_path',
    'num_citations', 'precision_positives', 'recall_positives',
)  # fmt: skip


def run_file_name(query_id: str, traj_id: str) -> str:
  r = metrics.repeat_index(traj_id)
  return f'run_{query_id}.json' if r == 0 else f'run_{query_id}_r{r}.json'


def result_items(traj: trajectory.Trajectory) -> list[dict[str, Any]]:
  """The trajectory as BrowseComp-Plus `result` items."""
  items, pending = [], []
  for m in traj.messages:
    if m.role == 'assistant':
      if m.reasoning:
        items.append(_item('reasoning', None, None, [m.reasoning]))
      pending = list(m.tool_calls)
    elif m.role == 'tool' and pending and m.name == pending[0].name:
      call = pending.pop(0)
      items.append(
          _item(
              'tool_call',
              call.name,
              json.dumps(call.arguments, ensure_ascii=False),
              m.content,
          )
      )
  reply = results.final_reply(traj)
  if reply:
    items.append(_item('output_text', None, None, reply))
  return items


def _item(kind, tool, arguments, output) -> dict[str, Any]:
  return {
      'type': kind,
      'tool_name': tool,
      'arguments': arguments,
      'output': output,
  }


def run_file(
    traj: trajectory.Trajectory,
    rec: Mapping[str, Any],
    model: str,
    out_dir,
    max_tokens: int | None = None,
) -> dict[str, Any]:
  """One rollout's run file (a JSON object)."""
  return {
      'metadata': {
          'model': model,
          'output_dir': str(out_dir),
          'max_tokens': max_tokens,
      },
      'query_id': rec['query_id'],
      'tool_call_counts': rec['tool_calls_by_name'],
      'status': 'completed' if traj.status == 'answered' else traj.status,
      'retrieved_docids': rec['retrieved_doc_ids'],
      'result': result_items(traj),
  }


def summary(
    records: Sequence[Mapping[str, Any]], model: str, retriever: str
) -> dict[str, Any]:
  """evaluation_summary.json of the records (one per rollout)."""
  n = len(records)
  tools: dict[str, float] = {}
  for r in records:
    for name, count in r.get('tool_calls_by_name', {}).items():
      tools[name] = tools.get(name, 0) + count
  recalls = [r['evidence_recall'] for r in records if r['evidence_count']]
  rms = metrics.calibration_rms(list(records))['error']
  return {
      'LLM': model or 'change me when submitting',
      'Accuracy (%)': round(
          100 * sum(bool(r['correct']) for r in records) / n, 2
      ),
      'Recall (%)': (
          round(100 * sum(recalls) / len(recalls), 2) if recalls else None
      ),
      'avg_tool_stats': {k: v / n for k, v in tools.items()},
      'Calibration Error (%)': round(100 * rms, 2) if rms is not None else 0.0,
      'Retriever': retriever,
      'Link': 'change me when submitting',
      'Evaluation Date': datetime.date.today().isoformat(),
      'per_query_metrics': [
          {
              'query_id': r['query_id'],
              'correct': bool(r['correct']),
              'recall': (
                  round(100 * r['evidence_recall'], 2)
                  if r['evidence_recall'] is not None
                  else None
              ),
          }
          for r in records
      ],
  }


def csv_row(rec: Mapping[str, Any], response: str, json_path: str) -> dict:
  predicted = rec.get('extracted_answer') or (
      response[:200] + '...' if len(response) > 200 else response
  )
  return {
      'query_id': rec['query_id'],
      'predicted_answer': predicted,
      'correct_answer': rec.get('reference', ''),
      'judge_correct': '' if rec['correct'] is None else rec['correct'],
      'confidence': '' if rec['confidence'] is None else rec['confidence'],
      'is_completed': rec['status'] == 'answered',
      'parse_error': rec['correct'] is None,
      'json_path': json_path,
      'num_citations': len(rec['cited_doc_ids']),
      'precision_positives': rec['citation_precision'],
      'recall_positives': rec['citation_recall'],
  }


def write(
    out: pathlib.Path,
    trajs: Sequence[trajectory.Trajectory],
    records: Sequence[dict[str, Any]],
    tasks: Mapping[str, Any],
    *,
    model: str,
    retriever: str,
    max_tokens: int | None = None,
) -> dict[str, Any]:
  """Writes the three outputs into `out`; returns the summary."""
  by_id = {t.id: t for t in trajs}
  records = [
      {**r, 'query_id': tasks[r['task_id']].meta.get('query_id', r['task_id'])}
      for r in records
      if r['traj_id'] in by_id
  ]
  body = summary(records, model, retriever)
  (out / SUMMARY).write_text(json.dumps(body, indent=2, ensure_ascii=False))
  if any(results.secret(tasks[r['task_id']]) for r in records):
    return body  # encrypted queries: no answer text on disk
  runs = out / RUNS
  runs.mkdir(exist_ok=True)
  rows = []
  for rec in records:
    traj = by_id[rec['traj_id']]
    path = runs / run_file_name(rec['query_id'], rec['traj_id'])
    path.write_text(
        json.dumps(
            run_file(traj, rec, model, runs, max_tokens),
            indent=2,
            ensure_ascii=False,
        )
    )
    rows.append(csv_row(rec, results.final_reply(traj), str(path)))
  with (out / DETAILS).open('w', newline='', encoding='utf-8') as f:
    writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
  return body
