"""Trajectory records: JSON round trip, field errors, append-only JSONL."""

import json

import pytest

from search_agent.agent import trajectory as tr


def _traj(i: int) -> tr.Trajectory:
  return tr.Trajectory(
      id=f't{i}',
      task_id='q1',
      question='Who directed it?',
      messages=(
          tr.Turn(role='system', content='You search.'),
          tr.Turn(role='user', content='Who directed it?'),
          tr.Turn(
              role='assistant',
              content='<tool_call>{}</tool_call>',
              reasoning='look it up',
              tool_calls=(
                  tr.ToolCall(name='search', arguments={'query': ['x']}),
              ),
          ),
          tr.Turn(role='tool', content='r1. X', name='search'),
          tr.Turn(role='assistant', content='<answer>Y</answer>'),
      ),
      final_answer='Y',
      tokens=tr.TokenRecord(
          token_ids=(1, 2, 3),
          loss_mask=(0, 1, 1),
          logprobs=(0.0, -0.5, -0.1),
          versions=(-1, 3, 3),
      ),
  )


def test_round_trip_is_exact():
  t = _traj(0)
  back = tr.Trajectory.from_json(json.loads(json.dumps(t.to_json())))
  assert back == t
  assert [c.name for c in back.tool_calls] == ['search']
  assert [m.trainable for m in back.messages] == [
      False,
      False,
      True,
      False,
      True,
  ]


@pytest.mark.parametrize(
    'mutate, message',
    [
        (lambda d: d.pop('question'), "missing field 'question'"),
        (lambda d: d.update(status='done'), "status 'done'"),
        (lambda d: d['messages'][0].update(role='bot'), "role 'bot'"),
        (
            lambda d: d['tokens'].update(versions=[-1, 3]),
            'tokens.versions has 2',
        ),
        (lambda d: d.update(schema_version=9), 'schema_version 9'),
    ],
)
def test_bad_records_name_the_field(mutate, message):
  d = _traj(0).to_json()
  mutate(d)
  with pytest.raises(tr.TrajectoryFormatError, match=message):
    tr.Trajectory.from_json(d)


def test_torn_line_costs_only_itself(tmp_path):
  path = tmp_path / 'traj.jsonl'
  tr.append_jsonl(path, _traj(0))
  with open(path, 'a', encoding='utf-8') as f:
    f.write('{"id": "torn", "task_')  # a writer killed mid-line
  tr.append_jsonl(path, _traj(1))
  errors = []
  ids = [t.id for t in tr.iter_jsonl(path, errors)]
  assert ids == ['t0', 't1']
  assert [(e.line_no, e.reason.split(':')[0]) for e in errors] == [
      (2, 'JSONDecodeError')
  ]
  with pytest.raises(tr.TrajectoryFormatError, match=r'traj.jsonl:2'):
    list(tr.iter_jsonl(path))


def test_write_jsonl_replaces_the_whole_file(tmp_path):
  path = tmp_path / 'train.jsonl'
  path.write_text('{"id": "old"}\n{"id": "torn', encoding='utf-8')
  (tmp_path / 'train.jsonl.tmp').write_text('left by a killed writer')
  assert tr.write_jsonl(path, (_traj(i) for i in range(3))) == 3
  assert [t.id for t in tr.iter_jsonl(path)] == ['t0', 't1', 't2']
  assert [p.name for p in tmp_path.iterdir()] == ['train.jsonl']
  assert tr.write_jsonl(path, []) == 0 and path.read_text() == ''
