"""MAS: two searchers, a verifier that sees both attempts and searches more."""

import asyncio
import dataclasses
import json

import pytest

from search_agent.agent import budgets
from search_agent.agent import mas
from search_agent.agent import react
from search_agent.agent import trajectory
from search_agent.llm import protocol
from search_agent.llm import scripted
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import schemas


@dataclasses.dataclass
class Result:
  text: str
  error: str | None = None


class Toolbox:
  made = 0

  def __init__(self):
    Toolbox.made += 1

  def schemas(self):
    return schemas.tool_schemas(('search',))

  async def execute(self, call):
    return Result(text=f'hits for {call.arguments["query"][0]}')


def search(q):
  body = json.dumps({'name': 'search', 'arguments': {'query': [q]}})
  return f'<tool_call>{body}</tool_call>'


def policy(verifier_answers: bool):
  """Searcher 0 says Lyon, searcher 1 says Paris; the verifier checks."""

  def respond(messages):
    steps = sum(m['role'] == 'assistant' for m in messages)
    if messages[0]['content'].startswith('You are the verifier'):
      if steps == 0 or not verifier_answers:
        return search('capital of France verify')
      return 'Explanation: checked.\nConfidence: 95%\n<answer>Paris</answer>'
    if steps == 0:
      return search(f'france capital {len(messages)}')
    # The first searcher to finish says Lyon, the second Paris.
    respond.finished += 1
    answer = 'Lyon' if respond.finished == 1 else 'Paris'
    return f'Confidence: 50%\n<answer>{answer}</answer>'

  respond.finished = 0
  return respond


def _run(verifier_answers=True, max_steps=5):
  llm = scripted.ScriptedLLM(policy(verifier_answers))
  config = react.AgentConfig(budgets=budgets.Budgets(max_steps=max_steps))
  agent = react.ReActAgent(llm, config)
  system = mas.MultiAgentSystem(
      agent, mas.MASConfig(), tool_text=react.tool_text(Toolbox().schemas())
  )
  Toolbox.made = 0
  traj = asyncio.run(
      system.run(
          traj_id='t#0',
          task_id='t',
          question='What is the capital of France?',
          system_prompt='SEARCHER',
          toolbox_factory=Toolbox,
      )
  )
  return traj, llm


def test_verifier_sees_both_attempts_searches_more_and_answers():
  traj, llm = _run()
  assert Toolbox.made == 3  # one toolbox per agent
  info = traj.meta['mas']
  assert sorted(info['searcher_answers']) == ['Lyon', 'Paris']
  assert len(info['searchers']) == 2 and info['fallback'] is False
  # The verifier prompt lists both attempts with their calls and answers.
  first_user = traj.messages[1].content
  assert 'What is the capital of France?' in first_user
  assert '## Attempt 1' in first_user and '## Attempt 2' in first_user
  assert 'Proposed answer: Lyon' in first_user
  assert 'Proposed answer: Paris' in first_user
  assert '- search {"query": ["france capital 2"]}' in first_user
  assert traj.messages[0].content.startswith('You are the verifier')
  # It searched more, then gave the final answer.
  assert [c.arguments['query'][0] for c in traj.tool_calls] == [
      'capital of France verify'
  ]
  assert traj.final_answer == 'Paris' and traj.status == 'answered'
  assert traj.meta['mas_role'] == 'verifier'
  assert set(info['prompt_hashes']) == {'mas_verifier.md', 'mas_attempts.md'}
  assert (
      info['prompt_hashes']['mas_verifier.md']
      == prompt_lib.load('mas_verifier.md').sha256
  )


def test_verifier_without_answer_falls_back_to_a_searcher_answer():
  traj, _ = _run(verifier_answers=False, max_steps=3)
  info = traj.meta['mas']
  assert info['verifier_status'] == 'max_steps' and info['fallback'] is True
  assert traj.final_answer == info['searcher_answers'][0]
  assert traj.budgets_hit == ('max_steps',)


def test_attempt_text_is_capped_from_the_end():
  traj, _ = _run()
  searcher = traj.meta['mas']['searchers'][0]
  text = mas.format_attempt(
      0, trajectory.Trajectory.from_json(searcher), max_chars=40
  )
  assert text.startswith('...') and len(text) == 43
  assert text.endswith(f'Proposed answer: {searcher["final_answer"]}')


def test_a_crashed_searcher_cancels_the_other():
  """The MAS fails as a whole; no searcher keeps calling the LLM after it."""
  state = {'calls': 0}

  def respond(messages):
    state['calls'] += 1
    if state['calls'] == 1:
      raise protocol.LLMError('endpoint down')
    return search('more')

  llm = scripted.ScriptedLLM(respond, delay_s=0.01)
  config = react.AgentConfig(budgets=budgets.Budgets(max_steps=100))
  system = mas.MultiAgentSystem(
      react.ReActAgent(llm, config),
      mas.MASConfig(),
      tool_text=react.tool_text(Toolbox().schemas()),
  )

  async def go():
    with pytest.raises(protocol.LLMError, match='endpoint down'):
      await system.run(
          traj_id='t#0',
          task_id='t',
          question='Q?',
          system_prompt='SEARCHER',
          toolbox_factory=Toolbox,
      )
    at_failure = len(llm.calls)
    await asyncio.sleep(0.1)
    return at_failure, len(llm.calls)

  at_failure, later = asyncio.run(go())
  assert later == at_failure < 10
