"""Tests for the degeneration detectors, with hand-worked figures."""

import dataclasses
import random
import string
import zlib

import pytest

from search_agent.agent import trajectory as T
from search_agent.filtering import calibrate
from search_agent.filtering import degeneration as D

CFG = D.DegenerationConfig()


def fluent(n, seed=0):
  """Pseudo-text: random lowercase words, ~1.6x compressible."""
  rng = random.Random(seed)
  words = []
  while sum(len(w) + 1 for w in words) < n:
    words.append(
        ''.join(
            rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))
        )
    )
  return ' '.join(words)[:n]


def test_compression_ratio_hand_worked():
  # 256 distinct bytes do not compress: zlib stores them in one stored block,
  # 2 (header) + 1 (block header) + 2 (LEN) + 2 (NLEN) + 256 + 4 (Adler-32)
  # = 267 bytes, so the ratio is 256 / 267 = 0.9588.
  data = bytes(range(256))
  assert len(zlib.compress(data, 9)) == 267
  assert D.compression_ratio(data) == pytest.approx(256 / 267)
  # 1000 x 'a' is one literal and back-references: 17 bytes, ratio 58.82.
  assert D.compression_ratio(b'a' * 1000) == pytest.approx(1000 / 17)
  assert D.compression_ratio(b'') == 0.0


def test_window_ratio_finds_the_loop():
  head, loop, tail = (
      fluent(3000, 1),
      'the same sentence again. ' * 100,
      fluent(3000, 2),
  )
  text = head + loop + tail
  ratio, at = D.max_window_ratio(text, window=1024, stride=256)
  assert ratio > 10
  assert 3000 - 256 < at < 3000 + 2500 - 1024 + 256
  clean, _ = D.max_window_ratio(head + tail, window=1024, stride=256)
  assert clean < 2.5


def test_window_covers_tail_and_short_text():
  text = fluent(2000) + 'x' * 300
  # Windows start at 0, 512, 1024, 1536 and the tail 2300 - 1024 = 1276.
  _, at = D.max_window_ratio(text, window=1024, stride=512)
  assert at == 1276
  short = 'abc abc'
  assert D.max_window_ratio(short, 1024, 256) == (
      D.compression_ratio(short.encode()),
      0,
  )


def test_repeating_lines():
  text = 'intro\nA\nB\nA\nB\nA\nB\nend'
  assert D.repeating_lines(text, max_period=8) == (3, 2, 'A')
  assert D.repeating_lines('a\nb\nc', 8) == (1, 0, '')
  # Blank lines do not break a period.
  assert D.repeating_lines('x\n\nx\n\nx\n\nx', 8)[:2] == (4, 1)


def test_longest_char_run():
  assert D.longest_char_run('ab' + '!' * 70 + 'c') == ('!', 70)
  assert D.longest_char_run('') == ('', 0)


def test_identical_calls_and_unterminated(make_traj):
  same = ('search', {'query': ['x']})
  t = make_traj(calls=(same, same, same, ('search', {'query': ['y']})))
  assert D.identical_call_run(t)[0] == 3
  assert D.identical_call_run(make_traj())[0] == 1
  broken = dataclasses.replace(
      t,
      messages=t.messages
      + (T.Turn(role='assistant', content='<answer>Paris'),),
  )
  fake = dataclasses.replace(
      t,
      messages=t.messages
      + (T.Turn(role='assistant', content='<tool_response>x</tool_response>'),),
  )
  assert D.unterminated_blocks(fake) == [
      f'turn {len(t.messages)}: hallucinated_observation'
  ]
  assert D.unterminated_blocks(broken) == [
      f'turn {len(t.messages)}:' ' unterminated_answer'
  ]


def test_detectors_fire_with_reasons(make_traj):
  same = ('search', {'query': ['x']})
  t = make_traj(calls=(same, same))
  _, hits = D.detect(t, CFG)
  assert [r for r, _ in hits] == ['identical_tool_calls']
  loop = make_traj(reasoning='I will check again. ' * 300)
  result = D.degeneration_filter([make_traj(id_='ok'), loop, t], CFG)
  assert [x.id for x in result.kept] == ['ok']
  assert [r.reason for r in result.removed] == [
      'compression_ratio',
      'identical_tool_calls',
  ]
  assert 'I will check again.' in result.removed[0].detail
  assert result.stats['detectors_fired']['identical_tool_calls'] == 1


def test_disabled_detectors(make_traj):
  off = D.DegenerationConfig(
      max_ratio=0,
      line_min_repeats=0,
      max_char_run=0,
      max_identical_calls=0,
      check_unterminated=False,
  )
  loop = make_traj(reasoning='again ' * 500, calls=(('s', {}),) * 3)
  assert D.detect(loop, off)[1] == []


def test_bad_config_raises():
  with pytest.raises(ValueError, match='window_bytes'):
    D.DegenerationConfig(window_bytes=0)


def test_real_trajectories_pass_and_loops_are_caught(webdancer):
  result = D.degeneration_filter(webdancer, CFG)
  # Calibrated: no real trajectory reaches 3.34 (max 3.32), no detector
  # fires on the 200 real trajectories.
  assert len(result.kept) == 200
  assert result.stats['max_window_ratio']['max'] == pytest.approx(
      3.3193, abs=1e-4
  )
  looped = [calibrate.loop_variant(t, 120, 4096, seed=0) for t in webdancer]
  caught = D.degeneration_filter(looped, CFG)
  assert len(caught.removed) == 200
