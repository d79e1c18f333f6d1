"""Result records: redaction, leakage check, the judged reply, encryption."""

import dataclasses

from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.evaluation import grading
from search_agent.evaluation import results

HF = 'https://huggingface.co/datasets/openai/browsecomp'


def _traj(answer='Paris'):
  call = trajectory.ToolCall(name='open', arguments={'ref_id': HF})
  return trajectory.Trajectory(
      id='t#0',
      task_id='t',
      question='Q?',
      messages=(
          trajectory.Turn(role='system', content='s'),
          trajectory.Turn(role='user', content='Q?'),
          trajectory.Turn(role='assistant', content='', tool_calls=(call,)),
          trajectory.Turn(role='tool', name='open', content='Error: blocked'),
          trajectory.Turn(
              role='assistant',
              content=f'Confidence: 9%\n<answer>{answer}</answer>',
          ),
      ),
      final_answer=answer,
  )


def test_record_flags_leaks_and_keeps_text_for_plain_tasks():
  task = task_lib.Task(id='t', question='Q?', answer='Paris')
  grade = grading.Grade(correct=True, method='exact_match')
  rec = results.record(task, _traj(), grade, 'd')
  assert rec['leaked_urls'] == [HF]
  assert rec['question'] == 'Q?' and rec['prediction'] == 'Paris'
  assert rec['n_tool_calls'] == 1 and rec['tool_calls_by_name'] == {'open': 1}
  assert results.final_reply(_traj()).endswith('<answer>Paris</answer>')
  assert results.final_reply(_traj(answer=None)) == ''


def test_encrypted_tasks_are_redacted_and_round_trip(tmp_path):
  task = task_lib.Task(
      id='t', question='Q?', answer='Paris', meta={'canary': 'c4n4ry'}
  )
  rec = results.record(
      task, _traj(), grading.Grade(correct=True, method='judge'), 'd'
  )
  assert rec['redacted'] and 'question' not in rec and 'prediction' not in rec
  path = tmp_path / 'traj.jsonl'
  results.write_trajectory(path, _traj(), task)
  text = path.read_text()
  assert 'Paris' not in text and 'Q?' not in text
  assert results.finished_ids(path) == {'t#0'}
  [back] = results.read_trajectories(path, {'t': task})
  assert back == _traj()


def test_failed_encrypted_run_is_not_finished(tmp_path):
  """A crashed run of an encrypted benchmark is run again on resume."""
  task = task_lib.Task(
      id='t', question='Q?', answer='Paris', meta={'canary': 'c4n4ry'}
  )
  path = tmp_path / 'traj.jsonl'
  crash = runner.failed(task, 't#0', RuntimeError('endpoint down'), 0.1)
  results.write_trajectory(path, crash, task)
  assert results.finished_ids(path) == set()
  assert 'Q?' not in path.read_text()
  results.write_trajectory(path, _traj(), task)  # the rerun supersedes it
  assert results.finished_ids(path) == {'t#0'}


def test_redacted_records_keep_error_names_not_messages():
  """A judge reply or a crash message may quote the benchmark's plaintext."""
  task = task_lib.Task(
      id='t', question='Q?', answer='Paris', meta={'canary': 'c4n4ry'}
  )
  error = (
      "attempt 1: JudgeParseError: judge reply has no verdict: 'Paris is"
      " the reference'; attempt 2: LLMError: HTTP 400: Q? is too long"
  )
  grade = grading.Grade(correct=None, method='judge', attempts=2, error=error)
  crash = runner.failed(task, 't#0', ValueError('bad query "Q?"'), 0.1)
  rec = results.record(task, crash, grade, 'd')
  assert rec['judge_error'] == (
      'attempt 1: JudgeParseError; attempt 2: LLMError (message redacted)'
  )
  assert rec['run_error'] == 'ValueError (message redacted)'
  assert 'Paris' not in str(rec) and 'Q?' not in str(rec)
  plain = task_lib.Task(id='t', question='Q?', answer='Paris')
  rec = results.record(plain, crash, grade, 'd')
  assert rec['judge_error'] == error and 'bad query' in rec['run_error']


def test_trajectories_of_tasks_not_in_this_eval_are_skipped(tmp_path):
  """A resumed eval with a smaller dataset.limit reads only its own tasks."""
  tasks = [
      task_lib.Task(id=f't{i}', question='Q?', answer='A', meta={'canary': c})
      for i, c in enumerate(('c0', 'c1'))
  ]
  path = tmp_path / 'traj.jsonl'
  for task in tasks:
    crash = runner.failed(task, f'{task.id}#0', RuntimeError('down'), 0.1)
    results.write_trajectory(path, crash, task)
  [only] = results.latest_trajectories(path, {'t0': tasks[0]})
  assert only.id == 't0#0' and only.status == 'failed'


def test_a_line_torn_by_a_kill_is_redone_not_fatal(tmp_path):
  """A kill mid-append leaves half a line; resuming runs and grades it again."""
  task = task_lib.Task(
      id='t', question='Q?', answer='Paris', meta={'canary': 'c4n4ry'}
  )
  path = tmp_path / 'traj.jsonl'
  results.write_trajectory(path, _traj(), task)
  other = dataclasses.replace(_traj(), id='t#1')
  results.write_trajectory(path, other, task)
  text = path.read_text()
  path.write_text(text[: len(text) - 40])  # killed while writing 't#1'
  assert results.finished_ids(path) == {'t#0'}  # 't#1' runs again
  results.write_trajectory(path, other, task)  # the rerun
  assert results.finished_ids(path) == {'t#0', 't#1'}
  got = results.latest_trajectories(path, {'t': task})
  assert sorted(t.id for t in got) == ['t#0', 't#1']

  records = tmp_path / 'results.jsonl'
  grade = grading.Grade(correct=True, method='judge')
  results.append_record(records, results.record(task, _traj(), grade, 'd'))
  records.write_text(records.read_text()[:-10])  # killed mid-append
  assert results.read_records(records) == {}  # graded again
  results.append_record(records, results.record(task, _traj(), grade, 'd'))
  assert list(results.read_records(records)) == ['t#0']
