"""Tests for the compression-ratio calibration."""

from search_agent.filtering import calibrate
from search_agent.filtering import degeneration


def test_choose_threshold_hand_worked():
  # Negatives <= 2.5, positives >= 3.0: every grid value in [2.51, 3.00]
  # separates them perfectly (score 1 - 0 = 1); the middle candidate is
  # number (251 + 300) // 2 = 275 on the 0.01 grid.
  choice = calibrate.choose_threshold([2.0, 2.2, 2.5], [3.0, 4.0, 9.0])
  assert choice['recall'] == 1.0 and choice['false_positive_rate'] == 0.0
  assert choice['best_range'] == [2.51, 3.0]
  assert choice['threshold'] == 2.75
  # Overlap: at t in [2.01, 3.00] recall 1 - fpr 0.5 = 0.5; at t in
  # [3.51, 4.00] recall 1/3 - 0 = 0.33; the first range wins: (201+300)//2.
  choice = calibrate.choose_threshold([2.0, 3.5], [3.0, 3.2, 4.0])
  assert choice['best_range'] == [2.01, 3.0]
  assert choice['threshold'] == 2.5
  assert choice['false_positive_rate'] == 0.5 and choice['recall'] == 1.0


def test_loop_variant_repeats_a_span(webdancer):
  t = webdancer[0]
  v = calibrate.loop_variant(t, 100, 1000, seed=0)
  assert calibrate.repeats_for(100, 1000) == 10
  assert v.id == f'{t.id}-loop100x10'
  before = degeneration.decoded_text(t)
  after = degeneration.decoded_text(v)
  assert len(after) - len(before) == 900
  assert v.messages[0] == t.messages[0]


def test_calibration_on_real_trajectories(webdancer):
  cfg = degeneration.DegenerationConfig()
  result = calibrate.calibrate(webdancer[:40], cfg, (30, 500), (4096,), 0)
  assert result['real']['n'] == 40
  assert result['real']['max'] < 3.4
  assert all(v['ratios']['min'] > 3.4 for v in result['looped'])
  assert result['choice']['false_positive_rate'] == 0.0
  assert result['choice']['recall'] == 1.0
