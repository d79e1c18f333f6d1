"""ReAct loop harness logic: tool calls, invalid calls, budgets, CM policies.

These tests are about the harness, so the model is scripted and the toolbox
is a small stand-in that echoes its arguments; the end-to-end run against the
real index is in test_react_index.py.
"""

import asyncio
import dataclasses
import json

import pytest

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import react
from search_agent.agent import trajectory
from search_agent.llm import protocol
from search_agent.llm import scripted
from search_agent.search import schemas


@dataclasses.dataclass
class Result:
  text: str
  error: str | None = None


class EchoToolbox:
  """Answers every call with a fixed-size observation naming its query."""

  def __init__(self, obs_chars: int = 50):
    self.calls = []
    self._obs_chars = obs_chars

  def schemas(self):
    return schemas.tool_schemas(('search', 'visit'))

  async def execute(self, call):
    self.calls.append(call)
    if call.name == 'visit':
      return Result(text='', error='ref_id r9 is unknown')
    text = f'results for {call.arguments["query"]}'
    return Result(text=text.ljust(self._obs_chars, '.'))


class CompletionLLM:
  """Replies with prepared Completion objects (finish reasons, tokens)."""

  name = 'completions'

  def __init__(self, replies):
    self.replies = list(replies)
    self.calls = []

  async def chat(self, messages, params):
    self.calls.append((list(messages), params))
    reply = self.replies.pop(0)
    if isinstance(reply, Exception):
      raise reply
    return [reply(messages) if callable(reply) else reply]


def call(query: str) -> str:
  args = {'name': 'search', 'arguments': {'query': [query]}}
  body = json.dumps(args)
  return f'<think>look up {query}</think>\n<tool_call>{body}</tool_call>'


ANSWER = '<think>done</think>\nConfidence: 90%\n<answer>Paris</answer>'


def run(llm, config=react.AgentConfig(), toolbox=None, summarizer=None):
  agent = react.ReActAgent(llm, config, summarizer=summarizer)
  return asyncio.run(
      agent.run(
          traj_id='t#0',
          task_id='t',
          question='Capital of France?',
          system_prompt='SYSTEM',
          toolbox=toolbox or EchoToolbox(),
      )
  )


def test_search_then_answer():
  llm = scripted.ScriptedLLM([call('france capital'), ANSWER])
  traj = run(llm)
  assert traj.status == 'answered' and traj.final_answer == 'Paris'
  assert [m.role for m in traj.messages] == [
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
  ]
  assert traj.messages[2].reasoning == 'look up france capital'
  assert traj.messages[2].tool_calls[0].arguments == {
      'query': ['france capital']
  }
  assert traj.messages[3].name == 'search'
  assert traj.messages[3].content.startswith("results for ['france capital']")
  assert traj.budgets_hit == () and traj.meta['steps'] == 2
  assert traj.meta['context']['policy'] == 'none'
  # The second call saw the observation.
  assert llm.calls[1][-1]['role'] == 'tool'


def test_invalid_and_empty_turns_get_error_observations_and_loop_goes_on():
  bad = '<tool_call>{"name": "search", "arguments": </tool_call>'
  unknown = '<tool_call>{"name": "browse", "arguments": {}}</tool_call>'
  llm = scripted.ScriptedLLM([bad, unknown, 'I am thinking aloud.', ANSWER])
  traj = run(llm)
  assert traj.status == 'answered'
  assistant = [m for m in traj.messages if m.role == 'assistant']
  assert [m.invalid for m in assistant] == [True, True, True, False]
  errors = [m.content for m in traj.messages if m.name == 'error']
  assert 'bad_json' in errors[0] and 'unknown_tool' in errors[1]
  assert errors[2] == react.NO_ACTION


def test_tool_error_becomes_observation():
  visit = '<tool_call>{"name": "visit", "arguments": {"ref_id": ["r9"],'
  visit += ' "goal": "g"}}</tool_call>'
  traj = run(scripted.ScriptedLLM([visit, ANSWER]))
  assert traj.messages[3].content == 'Error: ref_id r9 is unknown'
  assert not traj.messages[2].invalid


def test_max_steps_is_explicit():
  config = react.AgentConfig(budgets=budgets.Budgets(max_steps=3))
  traj = run(scripted.ScriptedLLM(lambda m: call('again')), config)
  assert traj.status == 'max_steps' and traj.budgets_hit == ('max_steps',)
  assert traj.final_answer is None and traj.meta['steps'] == 3


def test_length_finish_ends_run_and_caps_max_tokens():
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          max_output_tokens=100, context_limit=2000, min_output_tokens=10
      )
  )
  llm = CompletionLLM(
      [protocol.Completion(text='<think>very long', finish_reason='length')]
  )
  traj = run(llm, config)
  assert traj.status == 'max_tokens'
  assert traj.budgets_hit == ('max_output_tokens',)
  assert llm.calls[0][1].max_tokens == 100
  assert traj.messages[-1].role == 'assistant'


def test_length_cut_by_the_context_room_is_a_context_limit():
  """A call whose budget was the context's room, not max_output_tokens."""
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          max_output_tokens=1000, context_limit=300, min_output_tokens=10
      )
  )
  llm = CompletionLLM(
      [protocol.Completion(text='<think>very long', finish_reason='length')]
  )
  traj = run(llm, config)
  assert llm.calls[0][1].max_tokens < 1000  # the room the prompt left
  assert traj.status == 'context_limit'
  assert traj.budgets_hit == ('context_limit',)


def test_context_limit_without_policy():
  config = react.AgentConfig(
      budgets=budgets.Budgets(context_limit=200, min_output_tokens=20)
  )
  traj = run(
      scripted.ScriptedLLM(lambda m: call('x')), config, EchoToolbox(300)
  )
  assert traj.status == 'context_limit'
  assert traj.budgets_hit == ('context_limit',)


def test_server_context_length_error_ends_run_as_context_limit():
  llm = CompletionLLM([protocol.ContextLengthError('too long')])
  traj = run(llm)
  assert traj.status == 'context_limit' and traj.meta['steps'] == 0


def _cm(policy, limit=400, **kw):
  return react.AgentConfig(
      budgets=budgets.Budgets(
          context_limit=limit, min_output_tokens=20, compress_at=0.5
      ),
      context=managed_context.ContextConfig(policy=policy, **kw),
  )


def test_discard_all_resets_to_question_and_notes():
  llm = scripted.ScriptedLLM([call(f'q{i}') for i in range(5)] + [ANSWER])
  traj = run(llm, _cm('discard_all'), EchoToolbox(250))
  assert traj.status == 'answered'
  events = traj.meta['context']['events']
  assert events, 'expected at least one reset'
  first = events[0]
  assert first['tokens_after'] < first['tokens_before']
  call_after = llm.calls[first['step'] - 1]
  assert [m['role'] for m in call_after[:3]] == ['system', 'user', 'user']
  assert call_after[1]['content'] == 'Capital of France?'
  note = call_after[2]['content']
  assert note.startswith(f'[context reset after step {first["step"] - 1}:')
  assert 'called search {"query": ["q0"]}' in note
  # The trajectory keeps the full, append-only history.
  assert len([m for m in traj.messages if m.role == 'tool']) == 5


def test_discard_all_compresses_when_the_output_room_runs_out_first():
  """compress_at=1.0: the limit minus min_output_tokens comes first."""
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          context_limit=400, min_output_tokens=100, compress_at=1.0
      ),
      context=managed_context.ContextConfig(policy='discard_all'),
  )
  llm = scripted.ScriptedLLM([call(f'q{i}') for i in range(5)] + [ANSWER])
  traj = run(llm, config, EchoToolbox(250))
  assert traj.status == 'answered' and traj.budgets_hit == ()
  events = traj.meta['context']['events']
  assert events and all(e['tokens_before'] > 300 for e in events)


def test_sliding_window_hides_old_observations():
  llm = scripted.ScriptedLLM([call(f'q{i}') for i in range(3)] + [ANSWER])
  traj = run(llm, _cm('sliding_window', limit=100_000, keep_observations=1))
  last = llm.calls[-1]
  tools = [m['content'] for m in last if m['role'] == 'tool']
  assert tools[0] == '[observation omitted: search, 50 chars]'
  assert tools[1] == tools[0] and tools[2].startswith('results for')
  assert traj.meta['context']['keep_observations'] == 1


def test_summary_replaces_history_and_failure_is_an_error():
  summarizer = scripted.ScriptedLLM(
      lambda m: '<think>x</think>Paris is likely.'
  )
  llm = scripted.ScriptedLLM([call(f'q{i}') for i in range(5)] + [ANSWER])
  traj = run(llm, _cm('summary'), EchoToolbox(250), summarizer)
  assert traj.status == 'answered'
  note = traj.meta['context']['events'][0]['note']
  assert note.endswith('Summary of your research so far:\nParis is likely.')
  assert 'q0' in summarizer.calls[0][0]['content']

  broken = scripted.ScriptedLLM([protocol.LLMError('judge down')])
  llm = scripted.ScriptedLLM([call(f'q{i}') for i in range(5)] + [ANSWER])
  traj = run(llm, _cm('summary'), EchoToolbox(250), broken)
  assert traj.status == 'failed'
  assert 'context summary call failed' in traj.error


def test_token_exact_record_when_backend_gives_tokens():
  def reply(text, gen):
    def make(messages):
      prompt = tuple(range(100, 100 + 3 * len(messages)))
      return protocol.Completion(
          text=text,
          token_ids=gen,
          logprobs=tuple(-0.5 for _ in gen),
          prompt_token_ids=prompt,
          policy_version=7,
      )

    return make

  # Prompt ids grow with the conversation, so each prompt extends the last
  # one only if generated ids equal the ids the prompt shows for that turn.
  llm = CompletionLLM([reply(call('a'), (106, 107, 108)), reply(ANSWER, (1,))])
  traj = run(llm)
  rec = traj.tokens
  assert rec.token_ids == tuple(range(100, 112)) + (1,)
  assert rec.loss_mask == (0,) * 6 + (1, 1, 1) + (0,) * 3 + (1,)
  assert rec.versions == (-1,) * 6 + (7,) * 3 + (-1,) * 3 + (7,)
  assert rec.logprobs[6:9] == (-0.5,) * 3 and traj.meta['tokens_note'] == ''
  assert 'generations' not in traj.meta  # the record already holds them

  assert traj.segments == (rec,)

  llm = CompletionLLM([reply(call('a'), (5, 5, 5)), reply(ANSWER, (1,))])
  traj = run(llm)
  assert traj.tokens is None  # no single sequence
  assert 'does not extend' in traj.meta['tokens_note']
  assert traj.meta['context_slides'] == 1
  # Two segments, each a prompt as the sampler received it and what it
  # generated: every generated token is kept with its context.
  first, second = traj.segments
  assert first.token_ids == tuple(range(100, 106)) + (5, 5, 5)
  assert first.loss_mask == (0,) * 6 + (1,) * 3
  assert second.token_ids == tuple(range(100, 112)) + (1,)
  assert second.loss_mask == (0,) * 12 + (1,)
  assert second.versions == (-1,) * 12 + (7,)
  assert 'generations' not in traj.meta  # the segments hold them
  # The trajectory file keeps them.
  again = trajectory.Trajectory.from_json(traj.to_json())
  assert again.segments == traj.segments and again.tokens is None


def test_budget_validation_messages():
  with pytest.raises(budgets.BudgetConfigError, match='min_output_tokens'):
    budgets.Budgets(context_limit=100, min_output_tokens=100)
  with pytest.raises(ValueError, match='not one of'):
    managed_context.ContextConfig(policy='forget')


def test_discard_all_never_resets_an_empty_history():
  # The first prompt alone is over the trigger: nothing to drop, no event.
  config = _cm('discard_all', limit=400)
  long_q = 'word ' * 150  # ~250 estimated tokens > 0.5 * 400
  agent = react.ReActAgent(scripted.ScriptedLLM([ANSWER]), config)
  traj = asyncio.run(
      agent.run(
          traj_id='t#0',
          task_id='t',
          question=long_q,
          system_prompt='SYSTEM',
          toolbox=EchoToolbox(),
      )
  )
  assert traj.status == 'answered' and traj.meta['context']['events'] == []


def test_calls_run_in_order_and_an_answer_wins_over_calls():
  box = EchoToolbox()
  two = call('a').split('\n', 1)[1] + call('b').split('\n', 1)[1]
  both = call('c') + '\n<answer>Paris</answer>'
  traj = run(scripted.ScriptedLLM([two, both]), toolbox=box)
  assert [c.arguments['query'] for c in box.calls] == [['a'], ['b']]
  assert [m.name for m in traj.messages if m.role == 'tool'] == ['search'] * 2
  assert traj.status == 'answered' and traj.final_answer == 'Paris'
  assert len(traj.messages[-1].tool_calls) == 1  # recorded, not run
