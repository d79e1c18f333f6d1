"""The climb's SFT data: RL's selected rollouts, demonstrations mixed in."""

import json
import subprocess
import sys

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.pipeline import climb


def _traj(tid, task, answer):
  msgs = (
      traj_lib.Turn(role='user', content=f'question {task}'),
      traj_lib.Turn(role='assistant', content=f'<answer>{answer}</answer>'),
  )
  return traj_lib.Trajectory(
      id=tid, task_id=task, question=f'question {task}', messages=msgs,
      final_answer=answer, status='answered',
  )  # fmt: skip


def _write(path, trajs):
  for t in trajs:
    traj_lib.append_jsonl(path, t)
  return str(path)


def test_selected_rollouts_come_first_and_duplicates_go(tmp_path):
  selected = _write(
      tmp_path / 'sel.jsonl', [_traj('rl#0', 'a', 'x'), _traj('rl#1', 'b', 'y')]
  )
  # The demonstration of task a says what the selected rollout says.
  demos = _write(
      tmp_path / 'demos.jsonl', [_traj('d0', 'a', 'x'), _traj('d1', 'c', 'z')]
  )
  counts = climb.merge(selected, demos, str(tmp_path / 'out'))
  assert counts == {
      'selected': 2,
      'demonstrations': 2,
      'duplicates': 1,
      'train': 3,
      'train_selected': 2,
  }
  kept = list(traj_lib.iter_jsonl(tmp_path / 'out' / 'train.jsonl'))
  assert [t.id for t in kept] == ['rl#0', 'rl#1', 'd1']
  assert json.loads((tmp_path / 'out' / 'climb.json').read_text()) == counts
  alone = climb.merge(selected, '', str(tmp_path / 'alone'))
  assert alone['train'] == 2 and alone['demonstrations'] == 0


def test_nothing_to_train_on_is_an_error_that_says_why(tmp_path):
  empty = tmp_path / 'sel.jsonl'
  empty.write_text('')
  with pytest.raises(climb.ClimbDataError, match='no query in the pass'):
    climb.merge(str(empty), '', str(tmp_path / 'out'))
  with pytest.raises(climb.ClimbDataError, match='climbing.enabled'):
    climb.merge(str(tmp_path / 'none.jsonl'), '', str(tmp_path / 'out'))
  assert not (tmp_path / 'out').exists()
  torn = tmp_path / 'torn.jsonl'
  torn.write_text('{"id": "x"\n')
  with pytest.raises(traj_lib.TrajectoryFormatError, match='torn.jsonl:1'):
    climb.merge(str(torn), '', str(tmp_path / 'out'))


def test_the_binary_prints_its_counts(tmp_path):
  selected = _write(tmp_path / 'sel.jsonl', [_traj('rl#0', 'a', 'x')])
  out = subprocess.run(
      [sys.executable, '-m', 'search_agent.pipeline.climb_data',
       f'--selected={selected}', f'--workdir={tmp_path / "out"}'],
      capture_output=True, text=True, check=True,
  )  # fmt: skip
  assert json.loads(out.stdout)['train'] == 1
