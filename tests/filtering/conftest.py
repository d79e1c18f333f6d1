"""Builders and real-data fixtures for the filtering tests."""

import json

import pytest

from search_agent.agent import chatml
from search_agent.agent import trajectory as T


def call(name='search', **arguments):
  return T.ToolCall(name=name, arguments=arguments or {'query': ['q']})


def traj(
    id_='t1',
    task_id='task1',
    *,
    calls=(('search', {'query': ['q']}),),
    answer='Paris',
    reference='Paris',
    status='answered',
    reasoning='I look it up.',
    invalid=(),
):
  """A trajectory: one assistant turn + observation per call, then answer.

  `invalid` lists indices (into `calls`) of turns marked invalid.
  """
  msgs = [
      T.Turn(role='system', content='You search.'),
      T.Turn(role='user', content='What is the capital of France?'),
  ]
  for i, (name, args) in enumerate(calls):
    msgs.append(
        T.Turn(
            role='assistant',
            content='<tool_call>\n'
            + json.dumps({'name': name, 'arguments': args})
            + '\n</tool_call>',
            reasoning=f'{reasoning} step {i}',
            tool_calls=(T.ToolCall(name=name, arguments=args),),
            invalid=i in invalid,
        )
    )
    msgs.append(T.Turn(role='tool', content=f'result {i}', name=name))
  if answer is not None:
    msgs.append(
        T.Turn(
            role='assistant',
            content=f'<answer>{answer}</answer>',
            reasoning='Found it.',
        )
    )
  return T.Trajectory(
      id=id_,
      task_id=task_id,
      question='What is the capital of France?',
      messages=tuple(msgs),
      final_answer=answer,
      status=status,
      meta={'answer': reference} if reference is not None else {},
  )


@pytest.fixture(scope='session')
def webdancer_path(shared_data):
  return shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl'


@pytest.fixture(scope='session')
def webdancer(webdancer_path):
  trajs, errors = chatml.import_chatml_file(webdancer_path)
  assert not errors
  return trajs


@pytest.fixture
def make_traj():
  """The `traj` builder above (test modules cannot import conftest)."""
  return traj
