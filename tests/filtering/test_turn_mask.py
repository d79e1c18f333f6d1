"""Tests for turn-level masking (harness logic: scripted judge)."""

import asyncio
import dataclasses
import json
import re

import pytest

from search_agent.agent import trajectory as T
from search_agent.filtering import judges
from search_agent.filtering import turn_mask as TM
from search_agent.llm import protocol
from search_agent.llm import scripted

CFG = TM.TurnMaskConfig(window_messages=2, max_masked_fraction=0.4)
REF = judges.Reference(question='q', answer='Paris')


def judged_index(prompt):
  """The message index right after the target mark in a judge prompt."""
  return int(re.search(TM.TARGET_MARK + r'\n\[(\d+)\]', prompt).group(1))


def labeller(mask):
  """A judge that masks the turns whose message index is in `mask`."""

  def respond(messages):
    i = judged_index(messages[-1]['content'])
    label = 'mask' if i in mask else 'keep'
    return json.dumps({'label': label, 'reason': 'rubric item 2'})

  return respond


def five_turns(make_traj):
  # Messages: 0 system, 1 user, then (assistant, tool) x 4 at 2..9, answer 10.
  calls = tuple(('search', {'query': [f'q{i}']}) for i in range(4))
  return make_traj(calls=calls)


def test_window_marks_target_and_truncates(make_traj):
  t = five_turns(make_traj)
  cfg = TM.TurnMaskConfig(window_messages=1, max_observation_chars=3)
  window = TM.render_window(t, 4, cfg)
  assert [int(x) for x in re.findall(r'^\[(\d+)\]', window, re.M)] == [3, 4, 5]
  assert window.count(TM.TARGET_MARK) == 1
  assert judged_index(window) == 4
  assert '[3] tool (search):\nres [... 5 more characters]' in window
  assert '<think>' in window  # Assistant turns as the model wrote them.


def test_cap_hand_worked(make_traj):
  t = five_turns(make_traj)
  # 5 assistant turns x 0.4 = 2 turns may be masked; the judge asks for 3
  # (messages 2, 4, 6): the first two are masked, one label is capped.
  labels = {2: 'mask', 4: 'mask', 6: 'mask', 8: 'keep'}
  out, masked, capped = TM.apply_labels(t, labels, CFG)
  assert (masked, capped) == (2, 1)
  assert [i for i, m in enumerate(out.messages) if not m.loss] == [2, 4]
  assert len(out.messages) == len(t.messages)  # Masked turns stay.
  # 0.2 x 5 = 1.
  _, masked, capped = TM.apply_labels(
      t, labels, TM.TurnMaskConfig(max_masked_fraction=0.2)
  )
  assert (masked, capped) == (1, 2)


def test_candidates_skip_final_and_invalid_turns(make_traj):
  t = make_traj(calls=(('search', {}), ('search', {})), invalid=(0,))
  # Messages: 2 invalid assistant, 4 assistant, 6 final answer.
  assert TM.candidate_turns(t, CFG) == [4]
  cfg = TM.TurnMaskConfig(judge_final_turn=True)
  assert TM.candidate_turns(t, cfg) == [4, 6]


def test_label_all_and_filter(make_traj):
  good = five_turns(make_traj)
  other = make_traj('t2', calls=(('search', {}),))
  llm = scripted.ScriptedLLM(labeller({2, 6}))
  labels = asyncio.run(TM.label_all([good, other], llm, None, CFG))
  assert labels['t1'] == {2: 'mask', 4: 'keep', 6: 'mask', 8: 'keep'}
  result = TM.turn_mask_filter([good, other], labels, CFG)
  assert len(result.kept) == 2 and result.errors == ()
  assert [m.loss for m in result.kept[0].messages if m.role == 'assistant'] == [
      False,
      True,
      False,
      True,
      True,
  ]
  assert result.stats['turns_judged'] == 5
  assert result.stats['turns_masked'] == 2
  assert result.stats['trajectories_with_masked_turns'] == 1
  prompt = llm.calls[0][0]['content']
  assert 'Reference answer (never shown to the agent): Paris' in prompt
  assert 'Mask the turn when:' in prompt  # The bundled rubric.


def test_judge_failures_are_errors(make_traj):
  t = five_turns(make_traj)
  for reply in ('{"label": "drop"}', 'no json here'):
    llm = scripted.ScriptedLLM(lambda _, r=reply: r)
    labels = asyncio.run(TM.label_all([t], llm, None, CFG))
    assert 'JudgeReplyError' in labels['t1']
    result = TM.turn_mask_filter([t], labels, CFG)
    assert result.kept == () and result.errors[0].reason == 'turn_judge_error'
  down = scripted.ScriptedLLM([protocol.LLMError('503')] * 4)
  labels = asyncio.run(TM.label_all([t], down, None, CFG))
  assert 'LLMError: 503' in labels['t1']

  class NoCompletions:
    name = 'empty'

    async def chat(self, messages, params):
      del messages, params
      return []

  labels = asyncio.run(TM.label_all([t], NoCompletions(), None, CFG))
  assert 'returned 0 completions' in labels['t1']  # an error, not a crash


def test_custom_rubric_file(make_traj, tmp_path):
  rubric = tmp_path / 'rubric.md'
  rubric.write_text('ONLY MASK LOOPS', encoding='utf-8')
  cfg = TM.TurnMaskConfig(rubric_path=str(rubric))
  llm = scripted.ScriptedLLM(labeller(set()))
  asyncio.run(TM.label_all([make_traj()], llm, None, cfg))
  assert 'ONLY MASK LOOPS' in llm.calls[0][0]['content']
  with pytest.raises(FileNotFoundError, match='rubric file'):
    TM.load_rubric(TM.TurnMaskConfig(rubric_path=str(tmp_path / 'nope')))


def test_bad_fraction():
  with pytest.raises(ValueError, match='max_masked_fraction'):
    TM.TurnMaskConfig(max_masked_fraction=1.5)


def test_masking_drops_a_stale_token_record(make_traj):
  t = dataclasses.replace(
      five_turns(make_traj),
      tokens=T.TokenRecord(
          token_ids=(1, 2),
          loss_mask=(0, 1),
          logprobs=(0.0, -1.0),
          versions=(-1, 0),
      ),
  )
  out, masked, _ = TM.apply_labels(t, {2: 'mask'}, CFG)
  assert masked == 1 and out.tokens is None
  assert out.meta['tokens_dropped'] == TM.TOKENS_DROPPED
  same, masked, _ = TM.apply_labels(t, {2: 'keep'}, CFG)
  assert masked == 0 and same.tokens == t.tokens
