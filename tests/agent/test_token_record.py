"""rendered_segments: a trajectory's training segments under a context
policy (what SFT trains of a demonstration and RL of a rollout)."""

import pathlib

import pytest

from search_agent.agent import chatml
from search_agent.agent import context
from search_agent.agent import token_record
from search_agent.agent.trajectory import Turn
from search_agent.chat import renderer
from search_agent.chat import tokenizer as tokenizer_lib
from tests.agent import dialogue

TOKENIZER = (
    pathlib.Path(__file__).parents[1] / 'chat' / 'golden' / 'tiny_tokenizer'
)
SYSTEM, QUESTION, MESSAGES = (
    dialogue.SYSTEM,
    dialogue.QUESTION,
    dialogue.MESSAGES,
)
_call, _obs = dialogue.call, dialogue.obs


@pytest.fixture(scope='module')
def tok():
  return tokenizer_lib.load_tokenizer(TOKENIZER)


def _render(tok, messages, **kw):
  return renderer.render(messages, tok, **kw)


def test_none_is_one_segment_the_whole_rendering(tok):
  (seg,) = token_record.rendered_segments(
      MESSAGES, context.policy_view('none'), tok
  )
  full = _render(tok, MESSAGES)
  n = len(full.token_ids) - len(tok.encode('\n'))  # no separator at the end
  assert seg.token_ids == full.token_ids[:n]
  assert seg.loss_mask == full.loss_mask[:n]
  assert set(seg.versions) == {-1} and set(seg.logprobs) == {0.0}


def test_sliding_window_by_hand(tok):
  """keep 1: turn 2 sees no obs, 4 sees obs1, 6 sees obs2 (obs1 omitted)..."""
  view = context.policy_view('sliding_window', 1)
  first, second, third = token_record.rendered_segments(MESSAGES, view, tok)
  # Turns 2 and 4 share a segment: turn 4's prompt extends turn 2's.
  assert first.token_ids == _render(tok, MESSAGES[:5]).token_ids[:-1]
  # Turn 6 saw obs one omitted: a new segment, whole prompt, loss on turn 6
  # alone; the answer saw obs one and two omitted.
  for seg, i in ((second, 6), (third, 8)):
    prompt = _render(tok, view(MESSAGES[:i]), add_generation_prompt=True)
    assert seg.token_ids[: len(prompt.token_ids)] == prompt.token_ids
    assert not any(seg.loss_mask[: len(prompt.token_ids)])
    assert all(seg.loss_mask[len(prompt.token_ids) :])
  # Each assistant turn is trained exactly once: 4 runs of loss tokens.
  runs = sum(
      len(token_record_runs(s.loss_mask)) for s in (first, second, third)
  )
  assert runs == 4


def token_record_runs(mask):
  return [
      i for i in range(len(mask)) if mask[i] and (i == 0 or not mask[i - 1])
  ]


def test_existing_loss_flags_are_respected(tok):
  masked = MESSAGES[:2] + (
      Turn(role='assistant', content='x', invalid=True),
      _obs('error'),
      _call('a'),
  )
  (seg,) = token_record.rendered_segments(
      masked, context.policy_view('none'), tok
  )
  full = _render(tok, masked)
  assert seg.loss_mask == full.loss_mask[: len(seg.loss_mask)]
  assert len(token_record_runs(seg.loss_mask)) == 1  # the invalid turn: none


def test_over_webdancer(shared_data, tok):
  """Every trainable turn of the 200 real trajectories is trained once.

  Measured: 422 assistant turns, 222 tool observations; keep 1 -> 222
  segments, keep 2 -> 201, keep 5 -> 200 (one per trajectory).
  """
  trajs, errors = chatml.import_chatml_file(
      shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl'
  )
  assert not errors
  counts = {}
  for keep in (1, 2, 5):
    view = context.policy_view('sliding_window', keep)
    n = 0
    for traj in trajs:
      segs = token_record.rendered_segments(traj.messages, view, tok)
      trained = sum(len(token_record_runs(s.loss_mask)) for s in segs)
      assert trained == sum(t.trainable for t in traj.messages)
      n += len(segs)
    counts[keep] = n
  assert counts == {1: 222, 2: 201, 5: 200}
