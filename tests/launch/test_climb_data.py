"""The climb's SFT data: RL's selected rollouts, demonstrations mixed in."""

import json
import subprocess
import sys

import pytest

from search_agent.agent import trajectory as traj_lib
from search_agent.filtering import climb_selection
from search_agent.pipeline import climb_data_job
from search_agent.train.rl import replay_queue

_CALL = traj_lib.Turn(
    role='assistant',
    content='search',
    tool_calls=(traj_lib.ToolCall(name='search', arguments={}),),
)
_OBSERVATION = traj_lib.Turn(role='tool', name='search', content='r')


def _traj(tid, task, answer, calls=0, group=None, correct=None):
  msgs = (
      traj_lib.Turn(role='user', content=f'question {task}'),
      *[_CALL, _OBSERVATION] * calls,
      traj_lib.Turn(role='assistant', content=f'<answer>{answer}</answer>'),
  )
  meta = {}
  if group is not None:
    meta = {'group_id': group, 'reward': {'correct': correct}}
  return traj_lib.Trajectory(
      id=tid, task_id=task, question=f'question {task}', messages=msgs,
      final_answer=answer, status='answered', meta=meta,
  )  # fmt: skip


def _write(path, trajs):
  for t in trajs:
    traj_lib.append_jsonl(path, t)
  return str(path)


def _rl_workdir(tmp_path):
  """An RL workdir: the journal of used groups and a worker's rollouts."""
  rl = tmp_path / 'rl'
  replay_queue.ReplayQueue(rl / 'queue').commit(0, ['a@0', 'b@0'])
  _write(
      rl / 'rollouts-0.jsonl',
      [
          _traj('a@0#0', 'a', 'x', 2, 'a@0', 1.0),
          _traj('a@0#1', 'a', 'x', 1, 'a@0', 1.0),  # the shortest success
          _traj('a@0#2', 'a', 'w', 1, 'a@0', 0.0),
          _traj('b@0#0', 'b', 'y', 1, 'b@0', 1.0),  # b: all pass, no band
          _traj('b@0#1', 'b', 'y', 1, 'b@0', 1.0),
          _traj('c@0#0', 'c', 'z', 1, 'c@0', 1.0),  # c: never used
          _traj('c@0#1', 'c', 'v', 1, 'c@0', 0.0),
      ],
  )
  return str(rl)


def test_selected_rollouts_come_first_and_duplicates_go(tmp_path):
  rl = _rl_workdir(tmp_path)
  # A demonstration of task a says what the selected rollout says.
  same = _traj('d0', 'a', 'x', 1)
  demos = _write(tmp_path / 'demos.jsonl', [same, _traj('d1', 'd', 'z', 1)])
  band = climb_selection.ClimbConfig(min_tool_turns=1)
  counts = climb_data_job.merge(rl, demos, str(tmp_path / 'out'), band)
  assert counts['rollouts'] == 5 and counts['queries'] == 2
  assert {k: counts[k] for k in ('selected', 'demonstrations')} == {
      'selected': 1,
      'demonstrations': 2,
  }
  assert (counts['duplicates'], counts['train']) == (1, 2)
  assert counts['train_selected'] == 1
  kept = list(traj_lib.iter_jsonl(tmp_path / 'out' / 'train.jsonl'))
  assert [t.id for t in kept] == ['a@0#1', 'd1']
  assert json.loads((tmp_path / 'out' / 'climb.json').read_text()) == counts
  # Depth 2: a's two-call success is the only deep one.
  deep = climb_data_job.merge(
      rl, '', str(tmp_path / 'deep'), climb_selection.ClimbConfig()
  )
  assert deep['train'] == 1 and deep['band']['min_tool_turns'] == 2
  kept = list(traj_lib.iter_jsonl(tmp_path / 'deep' / 'train.jsonl'))
  assert [t.id for t in kept] == ['a@0#0']


def test_nothing_to_train_on_is_an_error_that_says_why(tmp_path):
  rl = _rl_workdir(tmp_path)
  none = climb_selection.ClimbConfig(min_tool_turns=3)
  with pytest.raises(
      climb_data_job.ClimbDataError, match='no query of its 5 used'
  ):
    climb_data_job.merge(rl, '', str(tmp_path / 'out'), none)
  with pytest.raises(climb_data_job.ClimbDataError, match='no queue/'):
    climb_data_job.merge(str(tmp_path), '', str(tmp_path / 'out'))
  assert not (tmp_path / 'out').exists()
  torn = tmp_path / 'torn.jsonl'
  torn.write_text('{"id": "x"\n')
  with pytest.raises(traj_lib.TrajectoryFormatError, match='torn.jsonl:1'):
    climb_data_job.merge(rl, str(torn), str(tmp_path / 'out'))


def test_the_binary_prints_its_counts(tmp_path):
  rl = _rl_workdir(tmp_path)
  out = subprocess.run(
      [sys.executable, '-m', 'search_agent.pipeline.climb_data',
       f'--rl_workdir={rl}', '--min_tool_turns=2',
       f'--workdir={tmp_path / "out"}'],
      capture_output=True, text=True, check=True,
  )  # fmt: skip
  assert json.loads(out.stdout)['train_selected'] == 1
