"""Tests for reading mixed, partly malformed trajectory files."""

import json

from search_agent.filtering import inputs


def write_lines(path, rows):
  path.write_text('\n'.join(rows) + '\n', encoding='utf-8')
  return path


def test_mixed_file_counts_every_problem(webdancer_path, make_traj, tmp_path):
  chatml_lines = open(webdancer_path, encoding='utf-8').read().splitlines()
  browse = make_traj('ours-browse', calls=(('browse', {'url': 'x'}),))
  rows = [
      chatml_lines[0],
      json.dumps(make_traj('ours').to_json()),
      '{"truncated": ',
      json.dumps({'id': 'x', 'task_id': 'y', 'question': 'q'}),
      json.dumps(browse.to_json()),
      json.dumps({'messages': [{'role': 'user', 'content': 'q'}]}),
      chatml_lines[0],
  ]
  path = write_lines(tmp_path / 'mixed.jsonl', rows)
  trajs, summary = inputs.load_trajectories(
      path, known_tools=('search', 'visit')
  )
  assert summary.lines == 7
  assert summary.by_format == {'chatml': 2, 'trajectory': 2}
  assert [e.line_no for e in summary.line_errors] == [3, 4, 6]
  assert 'JSONDecodeError' in summary.line_errors[0].reason
  assert "missing field 'messages'" in summary.line_errors[1].reason
  assert 'no assistant turn' in summary.line_errors[2].reason
  assert summary.unknown_tool_calls == {'browse': 1}
  assert summary.parse_errors == {'unknown_tool': 1}
  # The unknown call stays as context, without loss.
  bad = next(t for t in trajs if t.id == 'ours-browse')
  turn = next(m for m in bad.messages if m.tool_calls)
  assert turn.invalid and not turn.loss
  # A repeated line keeps a unique id.
  assert len({t.id for t in trajs}) == 4


def test_forced_formats(webdancer_path, make_traj, tmp_path):
  path = write_lines(
      tmp_path / 'ours.jsonl', [json.dumps(make_traj().to_json())]
  )
  trajs, summary = inputs.load_trajectories(path, 'trajectory')
  assert trajs[0] == make_traj()
  # As chatml its structured tool calls would be lost: a counted line error.
  _, summary = inputs.load_trajectories(path, 'chatml')
  (error,) = summary.line_errors
  assert 'structured "tool_calls"' in error.reason
  trajs, summary = inputs.load_trajectories(webdancer_path, 'trajectory')
  assert trajs == [] and len(summary.line_errors) == 200


def test_unknown_tools_accepted_without_a_tool_list(make_traj):
  t = make_traj(calls=(('browse', {}),))
  assert inputs.mark_unknown_tools(t, ('browse',)) == (t, [])
  out, names = inputs.mark_unknown_tools(t, ('search',))
  assert names == ['browse'] and out.messages[2].invalid


def test_invalid_utf8_line_is_counted_not_a_crash(make_traj, tmp_path):
  good = json.dumps(make_traj('ok').to_json()).encode('utf-8')
  path = tmp_path / 'bytes.jsonl'
  path.write_bytes(good + b'\n\xff{"task_id": "t"}\n' + good + b'\n')
  trajs, summary = inputs.load_trajectories(path)
  assert summary.lines == 3 and len(trajs) == 2
  assert [e.line_no for e in summary.line_errors] == [2]
  assert 'UnicodeDecodeError' in summary.line_errors[0].reason
