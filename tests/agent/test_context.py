"""Tests of search_agent.agent.context: policies as pure message rewrites."""

import pytest

from search_agent.agent import context
from search_agent.agent.trajectory import Turn
from tests.agent import dialogue

SYSTEM, QUESTION, MESSAGES = (
    dialogue.SYSTEM,
    dialogue.QUESTION,
    dialogue.MESSAGES,
)
_call, _obs = dialogue.call, dialogue.obs


def test_sliding_window_by_hand():
  got = context.sliding_window(MESSAGES, keep_last_n_observations=1)
  assert got[3].content == '[observation omitted: search, 7 chars]'
  assert got[5].content == '[observation omitted: search, 8 chars]'
  assert got[7].content == 'obs three'
  # Everything but the old observations is intact, in order.
  same = [i for i in range(len(MESSAGES)) if i not in (3, 5)]
  assert [got[i] for i in same] == [MESSAGES[i] for i in same]
  assert got[3].name == 'search' and got[3].role == 'tool'


def test_sliding_window_keeps_all_when_window_is_large():
  assert context.sliding_window(MESSAGES, 3) == MESSAGES
  assert context.sliding_window(MESSAGES, 10) == MESSAGES
  zero = context.sliding_window(MESSAGES, 0)
  assert all(
      zero[i].content.startswith('[observation omitted') for i in (3, 5, 7)
  )


def test_running_notes_by_hand():
  msgs = MESSAGES[:4] + (
      Turn(
          role='assistant',
          content='Lead: 2013 film.\n<tool_call>{}</tool_call>',
      ),
  )
  assert context.running_notes(msgs) == (
      'called search {"query": ["a"]}\nnote: Lead: 2013 film.'
  )
  assert context.running_notes(msgs, max_chars=10) == '2013 film.'


def test_discard_all_exact_messages():
  got = context.discard_all(MESSAGES[:8], step=3, steps_left=497)
  assert got == (
      SYSTEM,
      QUESTION,
      Turn(
          role='user',
          content=(
              '[context reset after step 3: earlier turns were removed; 497'
              ' steps remain]\nYour running notes so far:\n'
              'called search {"query": ["a"]}\n'
              'called search {"query": ["b"]}\n'
              'called search {"query": ["c"]}'
          ),
      ),
  )


def test_apply_summary_exact_messages():
  got = context.apply_summary(
      MESSAGES, '  Candidate: X.\n', step=4, steps_left=1
  )
  assert got[:2] == (SYSTEM, QUESTION) and len(got) == 3
  assert got[2].content == (
      '[context reset after step 4: earlier turns were removed; 1 steps'
      ' remain]\nSummary of your research so far:\nCandidate: X.'
  )
  with pytest.raises(context.ContextPolicyError, match='empty summary'):
    context.apply_summary(MESSAGES, ' \n', step=4, steps_left=1)


def test_question_needs_system_then_user():
  assert context.question_end(MESSAGES) == 2
  assert context.question_end(MESSAGES[1:]) == 1
  with pytest.raises(context.ContextPolicyError, match='no question'):
    context.question_end([SYSTEM, _call('a')])


def test_policy_names_and_errors():
  assert context.POLICIES == (
      'none',
      'sliding_window',
      'discard_all',
      'summary',
  )
  with pytest.raises(context.ContextPolicyError, match='no per-call view'):
    context.policy_view('discard_all')
  with pytest.raises(context.ContextPolicyError, match='>= 0'):
    context.sliding_window(MESSAGES, -1)
