"""Per-question result records and the eval's files (append-only JSONL).

Files in the workdir:
  * `trajectories.jsonl`: one trajectory per line (search_agent format). For
    encrypted benchmarks every line is `{id, task_id, status, encrypted}`
    where `encrypted` is the trajectory JSON encrypted with the task's canary
    in the BrowseComp scheme: no benchmark plaintext reaches the disk (the
    status is a label, kept in the clear so that a resumed eval finds failed
    runs without decrypting). A failed run is retried by the next eval in the
    same workdir; the later line for an id supersedes the earlier one. A
    line cut short by a kill mid-append is passed over and its run redone.
  * `results.jsonl`: one record per graded trajectory; a later line for the
    same trajectory (a judge error re-graded) supersedes an earlier one.
    Records of encrypted benchmarks hold no question, reference, prediction
    or judge text (`redacted: true`), only numbers and labels; their
    `judge_error` and `run_error` keep only the exception names (a judge
    reply or a server's error body can quote the question or the answer).
    Every record has `run_error_kind` and `judge_error_kind` (class and
    transport cause, e.g. `LLMError: HTTP 500`, `LLMError: ConnectError`:
    never a secret, so kept for encrypted benchmarks too).
    Every record carries `leaked_urls`: the leakage guard's post-hoc check
    of its tool traffic (iris.md: blocked benchmark pages, even URLs the
    model wrote from memory).
"""

import collections
import json
import os
import re
from typing import Any, Iterator, Mapping

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.evaluation import decryption
from search_agent.evaluation import doc_ids
from search_agent.evaluation import evidence
from search_agent.evaluation import failures
from search_agent.evaluation import grading
from search_agent.search import guard

_GUARD = guard.LeakageGuard()
TRAJECTORIES = 'trajectories.jsonl'
RESULTS = 'results.jsonl'


def secret(task: task_lib.Task) -> str:
  """The canary that protects a task's text ('' for plaintext datasets)."""
  return task.meta.get('canary', '')


def write_trajectory(
    path: str | os.PathLike[str],
    traj: trajectory.Trajectory,
    task: task_lib.Task,
) -> None:
  """Appends a trajectory, encrypted when its task is encrypted."""
  canary = secret(task)
  if not canary:
    trajectory.append_jsonl(path, traj)
    return
  payload = json.dumps(traj.to_json(), ensure_ascii=False)
  line = json.dumps(
      {
          'id': traj.id,
          'task_id': traj.task_id,
          'status': traj.status,
          'encrypted': decryption.browsecomp_encrypt(payload, canary),
      }
  )
  trajectory.append_line(path, line)


def _json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
  """(line number, object) of each line; torn lines are passed over.

  A line that is not JSON is an append cut short by a kill: its run is not
  in `finished_ids`, so it runs again (or its record is missing, so it is
  graded again) and the new line supersedes it.
  """
  if not os.path.exists(path):
    return
  for line_no, obj in trajectory.parse_json_lines(path, lambda obj: obj):
    if not isinstance(obj, trajectory.LineError):
      yield line_no, obj


def read_trajectories(
    path: str | os.PathLike[str], tasks: Mapping[str, task_lib.Task]
) -> Iterator[trajectory.Trajectory]:
  """Reads (and decrypts in memory) trajectories of known tasks.

  Lines of other tasks (e.g. an earlier eval in the workdir with a larger
  `dataset.limit`) are skipped: their canary is not at hand.
  """
  for line_no, obj in _json_lines(path):
    try:
      if obj['task_id'] not in tasks:
        continue
      if 'encrypted' in obj:
        canary = secret(tasks[obj['task_id']])
        obj = json.loads(
            decryption.browsecomp_decrypt(obj['encrypted'], canary)
        )
      yield trajectory.Trajectory.from_json(obj)
    except (KeyError, TypeError, ValueError) as e:
      raise trajectory.TrajectoryFormatError(
          f'{path}:{line_no}: {type(e).__name__}: {e}'
      ) from e


def finished_ids(path: str | os.PathLike[str]) -> set[str]:
  """Ids whose latest line is not a failed run (no decryption needed).

  A failed run (crash, endpoint down) is run again by the next eval; its
  new line supersedes the old one.
  """
  latest = {
      obj['id']: obj.get('status', 'answered') for _, obj in _json_lines(path)
  }
  return {i for i, status in latest.items() if status != 'failed'}


def latest_trajectories(
    path: str | os.PathLike[str], tasks: Mapping[str, task_lib.Task]
) -> list[trajectory.Trajectory]:
  """The last trajectory per id."""
  return list({t.id: t for t in read_trajectories(path, tasks)}.values())


def final_reply(traj: trajectory.Trajectory) -> str:
  """What the judge reads: the last assistant turn holding the answer."""
  for m in reversed(traj.messages):
    if m.role == 'assistant' and traj.final_answer and '<answer>' in m.content:
      return m.content
  return f'Exact Answer: {traj.final_answer}' if traj.final_answer else ''


def _judge_error_kind(text: str | None) -> str | None:
  """The kind of the judge's last failed attempt ('LLMError: HTTP 503')."""
  if not text:
    return None
  return failures.error_kind(re.split(r'attempt \d+: ', text)[-1])


def _redacted_error(text: str | None, kind: str) -> str | None:
  """An error of an encrypted task without its message: names only."""
  if not text:
    return None
  if kind == 'judge':  # 'attempt 1: LLMError: ...; attempt 2: ...'
    names = re.findall(r'attempt \d+: \w+', text)
  else:  # 'RuntimeError: ...' (crash) or the loop's own message
    names = re.findall(r'\A(\w+):', text)
  return '; '.join(names or ['error']) + ' (message redacted)'


def record(
    task: task_lib.Task,
    traj: trajectory.Trajectory,
    grade: grading.Grade,
    dataset: str,
) -> dict[str, Any]:
  """The result record of one graded trajectory."""
  by_name = collections.Counter(c.name for c in traj.tool_calls)
  searchers = traj.meta.get('mas', {}).get('searchers', ())
  for searcher in searchers:  # MAS: the system's calls, searchers included
    for m in searcher['messages']:
      by_name.update(c['name'] for c in m.get('tool_calls', ()))
  out: dict[str, Any] = {
      'traj_id': traj.id,
      'task_id': task.id,
      'dataset': dataset,
      'status': traj.status,
      'budgets_hit': list(traj.budgets_hit),
      'steps': traj.meta.get('steps', 0),
      'n_tool_calls': sum(by_name.values()),
      'tool_calls_by_name': dict(by_name),
      'verifier_tool_calls': len(traj.tool_calls) if searchers else None,
      'invalid_turns': sum(m.invalid for m in traj.messages)
      + sum(m.get('invalid', False) for t in searchers for m in t['messages']),
      'correct': grade.correct,
      'grade_method': grade.method,
      'confidence': grade.confidence,
      'judge_attempts': grade.attempts,
      'judge_error': grade.error,
      'run_error': traj.error[:500] if traj.error else None,
      'run_error_kind': failures.error_kind(traj.error),
      'judge_error_kind': _judge_error_kind(grade.error),
      'seconds': traj.timings.get('total'),
      'context_policy': traj.meta.get('context', {}).get('policy'),
      'context_resets': len(traj.meta.get('context', {}).get('events', ())),
      'peak_prompt_tokens': traj.meta.get('usage', {}).get(
          'peak_prompt_tokens'
      ),
      'mas_fallback': traj.meta.get('mas', {}).get('fallback'),
  }
  out.update(_evidence(task, traj))
  turns = list(traj.messages)
  for searcher in searchers:
    turns += trajectory.Trajectory.from_json(searcher).messages
  out['leaked_urls'] = _GUARD.check_messages(turns)
  if secret(task):
    out['redacted'] = True
    out['judge_error'] = _redacted_error(grade.error, 'judge')
    out['run_error'] = _redacted_error(traj.error, 'run')
  else:
    out.update(
        question=task.question,
        reference=task.answer,
        prediction=traj.final_answer,
        extracted_answer=grade.extracted_answer,
        judge_response=grade.judge_response,
    )
  return out


def _evidence(task: task_lib.Task, traj: trajectory.Trajectory) -> dict:
  """Retrieved doc ids, evidence recall and citations of one rollout.

  Doc ids are not benchmark text (BrowseComp-Plus publishes its qrels in
  the clear), so they are kept for encrypted benchmarks too.
  """
  calls = traj.meta.get('doc_ids', ())
  searched = doc_ids.retrieved(
      c for c in calls if 'search' in c['tool'] or 'retrieval' in c['tool']
  )
  cited = evidence.citations(final_reply(traj))
  cite = evidence.citation_metrics(cited, task.evidence)
  return {
      'retrieved_doc_ids': searched,
      'read_doc_ids': doc_ids.retrieved(
          c for c in calls if c['tool'] not in ('search',)
      ),
      'evidence_count': len(task.evidence),
      'evidence_recall': evidence.recall(searched, task.evidence),
      'cited_doc_ids': cited,
      'citation_precision': cite['precision'],
      'citation_recall': cite['recall'],
  }


def append_record(path: str | os.PathLike[str], rec: Mapping[str, Any]) -> None:
  trajectory.append_line(path, json.dumps(rec, ensure_ascii=False))


def read_records(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
  """The latest record per trajectory id."""
  return {rec['traj_id']: rec for _, rec in _json_lines(path)}
