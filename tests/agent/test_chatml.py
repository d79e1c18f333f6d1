"""Tests for search_agent.agent.chatml on the real WebDancer trajectories."""

import collections
import json

import pytest

from search_agent.agent import chatml
from search_agent.agent import trajectory

FUNCTIONS = [
    {
        'name_for_model': 'search',
        'parameters': {'required': ['query']},
    },
    {
        'name_for_model': 'visit',
        'parameters': {'required': ['url', 'goal']},
    },
]


@pytest.fixture(scope='module')
def real(shared_data):
  path = shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl'
  return path, chatml.import_chatml_file(path)


def line(*turns, **extra):
  msgs = [{'role': 'system', 'content': 'sys'}]
  msgs.append({'role': 'user', 'content': '<tools>...</tools>\nUser: Q?'})
  msgs += [{'role': r, 'content': c} for r, c in turns]
  return {'messages': msgs, 'functions': FUNCTIONS, 'answer': [['A']]} | extra


def search(q='x'):
  args = json.dumps({'name': 'search', 'arguments': {'query': [q]}})
  return f'<think>plan</think>\n<tool_call>\n{args}\n</tool_call>'


def test_all_real_lines_import(real):
  path, (trajs, errors) = real
  n_lines = sum(1 for l in open(path, encoding='utf-8') if l.strip())
  assert n_lines == 200
  assert errors == []
  assert len(trajs) == 200
  assert len({t.id for t in trajs}) == 200
  roles = collections.Counter(m.role for t in trajs for m in t.messages)
  # Counted independently from the raw file: 422 assistant turns, 222
  # `<tool_call>` blocks answered by 222 `<tool_response>` user turns.
  assert roles == {'system': 200, 'user': 200, 'assistant': 422, 'tool': 222}
  names = collections.Counter(c.name for t in trajs for c in t.tool_calls)
  assert names == {'search': 204, 'visit': 18}
  tool_names = collections.Counter(
      m.name for t in trajs for m in t.messages if m.role == 'tool'
  )
  assert tool_names == names
  assert all(t.status == 'answered' and t.final_answer for t in trajs)
  assert not any(m.invalid for t in trajs for m in t.messages)


def test_real_line_fields(real):
  _, (trajs, _) = real
  t = trajs[0]
  assert t.question.startswith('In a prestigious British equestrian event')
  assert t.meta['answer'] == 'English horse race Derby'
  assert t.meta['tag'] == 'e2hqa'
  assert t.meta['tools'] == ['search', 'visit']
  assert [m.role for m in t.messages] == [
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
  ]
  first = t.messages[2]
  assert first.reasoning.startswith("Okay, let's tackle this question")
  assert '<think>' not in first.content
  assert first.tool_calls[0].arguments['query'][0] == (
      '1964 British horse race Christmas associated winner'
  )
  obs = t.messages[3]
  assert obs.name == 'search' and obs.content.startswith('A Google search')
  assert '<tool_response>' not in obs.content
  assert 'Epsom Derby' in t.final_answer


def test_roundtrip_through_our_jsonl(real, tmp_path):
  _, (trajs, _) = real
  out = tmp_path / 'out.jsonl'
  for t in trajs[:5]:
    trajectory.append_jsonl(out, t)
  assert list(trajectory.iter_jsonl(out)) == trajs[:5]


def test_rollouts_of_one_question_share_task_id():
  a = chatml.import_chatml_line(line(('assistant', '<answer>A</answer>')))
  b = chatml.import_chatml_line(line(('assistant', '<answer>B</answer>')))
  assert a.task_id == b.task_id and a.id != b.id


def test_invalid_tool_calls_mark_the_turn():
  bad_json = '<tool_call>{"name": "search", </tool_call>'
  unknown = '<tool_call>{"name": "browse", "arguments": {}}</tool_call>'
  missing = '<tool_call>{"name": "visit", "arguments": {"url": ["u"]}}'
  missing += '</tool_call>'
  t = chatml.import_chatml_line(
      line(
          ('assistant', bad_json),
          ('user', '<tool_response>\nerror\n</tool_response>'),
          ('assistant', unknown),
          ('user', '<tool_response>\nerror\n</tool_response>'),
          ('assistant', missing),
          ('user', '<tool_response>\nerror\n</tool_response>'),
          ('assistant', search()),
          ('user', '<tool_response>\nresults\n</tool_response>'),
          ('assistant', '<answer>A</answer>'),
      )
  )
  assistants = [m for m in t.messages if m.role == 'assistant']
  assert [m.invalid for m in assistants] == [True, True, True, False, False]
  assert [m.trainable for m in assistants] == [False] * 3 + [True] * 2
  kinds = [(e['kind'], e['tool']) for e in t.meta['parse_errors']]
  assert kinds == [
      ('bad_json', ''),
      ('unknown_tool', 'browse'),
      ('missing_argument', 'visit'),
  ]
  assert t.final_answer == 'A'


def test_several_responses_in_one_user_turn():
  two = search('a').replace('</tool_call>', '</tool_call>\n<tool_call>')
  two += '\n{"name": "visit", "arguments": {"url": ["u"], "goal": "g"}}'
  two += '\n</tool_call>'
  t = chatml.import_chatml_line(
      line(
          ('assistant', two),
          (
              'user',
              '<tool_response>r1</tool_response>\n'
              '<tool_response>r2</tool_response>',
          ),
          ('assistant', '<answer>A</answer>'),
      )
  )
  tools = [(m.name, m.content) for m in t.messages if m.role == 'tool']
  assert tools == [('search', 'r1'), ('visit', 'r2')]


def test_unanswered_trajectory_is_failed_not_dropped():
  t = chatml.import_chatml_line(
      line(('assistant', search()), ('user', '<tool_response>r'))
  )
  assert t.status == 'failed' and t.final_answer is None
  assert 'does not end with an <answer>' in t.error
  assert t.messages[-1].content == 'r'


def test_unterminated_think_kept_verbatim():
  t = chatml.import_chatml_line(line(('assistant', '<think>loop loop')))
  turn = t.messages[-1]
  assert turn.content == '<think>loop loop' and turn.reasoning == ''
  assert t.meta['parse_errors'][0]['kind'] == 'unterminated_think'


def test_tools_from_prompt_when_no_functions():
  prompt = (
      '<tools>\n{"name": "search", "parameters": {"required": ["query"]}}'
      '\n</tools>\nUser: Who?'
  )
  obj = {
      'messages': [
          {'role': 'user', 'content': prompt},
          {'role': 'assistant', 'content': search()},
          {'role': 'tool', 'content': 'r'},
          {'role': 'assistant', 'content': '<answer>x</answer>'},
      ]
  }
  t = chatml.import_chatml_line(obj)
  assert t.question == 'Who?' and t.meta['tools'] == ['search']
  assert t.messages[2].role == 'tool' and t.messages[2].name == 'search'
  assert 'answer' not in t.meta


@pytest.mark.parametrize(
    'obj, reason',
    [
        ([1, 2], 'expected a JSON object'),
        ({'answer': 'x'}, 'missing or empty field "messages"'),
        ({'messages': [{'role': 'system', 'content': 's'}]}, 'no user'),
        ({'messages': [{'role': 'user', 'content': 'q'}]}, 'no assistant'),
        (
            {'messages': [{'role': 'user', 'content': 'q'}, 'hi']},
            'messages[1] is not an object',
        ),
        (
            {'messages': [{'role': 'user', 'content': 'q'}, {'role': 'x'}]},
            'messages[1].content is not a string',
        ),
        (
            {'messages': [{'role': 'critic', 'content': 'q'}]},
            'no user message',
        ),
        (
            {
                'messages': [
                    {'role': 'user', 'content': 'q'},
                    {'role': 'critic', 'content': 'c'},
                ]
            },
            "messages[1].role 'critic' is unknown",
        ),
        (
            {
                'messages': [
                    {'role': 'user', 'content': 'q'},
                    {
                        'role': 'assistant',
                        'content': '',
                        'tool_calls': [
                            {'name': 'search', 'arguments': {'query': ['x']}}
                        ],
                    },
                ]
            },
            'messages[1] has structured "tool_calls"',
        ),
    ],
)
def test_malformed_records_raise_with_reason(obj, reason):
  with pytest.raises(
      chatml.ChatmlFormatError, match=reason.replace('[', r'\[')
  ):
    chatml.import_chatml_line(obj)


def test_file_reports_every_bad_line(real, tmp_path):
  path, _ = real
  lines = open(path, encoding='utf-8').read().splitlines()[:3]
  bad = tmp_path / 'mixed.jsonl'
  bad.write_text(
      '\n'.join(
          [
              lines[0],
              '{not json',
              json.dumps({'messages': []}),
              lines[1],
              '',
              lines[0],
          ]
      )
      + '\n',
      encoding='utf-8',
  )
  trajs, errors = chatml.import_chatml_file(bad)
  assert len(trajs) == 3
  assert [e.line_no for e in errors] == [2, 3]
  assert errors[0].reason.startswith('JSONDecodeError')
  assert 'messages' in errors[1].reason
  # A repeated line keeps a unique id.
  assert trajs[2].id == trajs[0].id + '-1'


def test_invalid_utf8_line_is_a_line_error_not_a_crash(real, tmp_path):
  path, _ = real
  lines = open(path, encoding='utf-8').read().splitlines()[:2]
  bad = tmp_path / 'bytes.jsonl'
  bad.write_bytes(
      lines[0].encode('utf-8')
      + b'\n\xff\xfe{"messages": []}\n'
      + lines[1].encode('utf-8')
      + b'\r\n'
  )
  trajs, errors = chatml.import_chatml_file(bad)
  assert len(trajs) == 2
  assert [e.line_no for e in errors] == [2]
  assert errors[0].reason.startswith('UnicodeDecodeError')
