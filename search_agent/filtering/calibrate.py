"""Calibration of the compression-ratio threshold on real trajectories.

Real trajectories give the ratio distribution of fluent model output
(negatives); deliberately looped variants of the same trajectories give the
distribution of loops (positives). A looped variant repeats a span of
`period` characters of the longest assistant reasoning in place until the
repeated region is `loop_chars` long, so the loop sits inside real text, as
a model loop does. The threshold is chosen on loops long enough to fill a
window (loop_chars >= window): the grid value maximising recall - false
positive rate, the middle of the best range when several values tie.
Shorter loops are reported too, to show what the window cannot see.
"""

import dataclasses
import math
import random
from typing import Any, Sequence

from search_agent.agent import trajectory
from search_agent.filtering import degeneration
from search_agent.filtering import stage_result


def repeats_for(period: int, loop_chars: int) -> int:
  """Copies of a span making a looped region of at least `loop_chars`."""
  return max(2, math.ceil(loop_chars / max(1, period)))


def loop_variant(
    traj: trajectory.Trajectory, period: int, loop_chars: int, seed: int
) -> trajectory.Trajectory:
  """Repeats a `period`-character span of the longest reasoning in place.

  The span starts at a seeded random offset; the repeated region (original
  span included) is repeats_for(period, loop_chars) periods long.
  """
  turns = list(traj.messages)
  i = max(
      (j for j, m in enumerate(turns) if m.role == 'assistant'),
      key=lambda j: len(turns[j].reasoning or turns[j].content),
  )
  field = 'reasoning' if turns[i].reasoning else 'content'
  text = getattr(turns[i], field)
  rng = random.Random(f'{seed}:{traj.id}:{period}:{loop_chars}')
  at = rng.randrange(0, max(1, len(text) - period))
  span = text[at : at + period]
  repeats = repeats_for(len(span), loop_chars)
  looped = text[:at] + span * repeats + text[at + period :]
  turns[i] = dataclasses.replace(turns[i], **{field: looped})
  return dataclasses.replace(
      traj, id=f'{traj.id}-loop{period}x{repeats}', messages=tuple(turns)
  )


def ratios(
    trajs: Sequence[trajectory.Trajectory],
    config: degeneration.DegenerationConfig,
) -> list[float]:
  """Max window ratio of each trajectory's decoded text."""
  return [
      degeneration.max_window_ratio(
          degeneration.decoded_text(t),
          config.window_bytes,
          config.stride_bytes,
          config.zlib_level,
      )[0]
      for t in trajs
  ]


def choose_threshold(
    negatives: Sequence[float], positives: Sequence[float], step: float = 0.01
) -> dict[str, Any]:
  """The threshold that best separates positives (>=) from negatives.

  Candidates are multiples of `step` between the smallest and largest value;
  the score is recall - false positive rate; the chosen threshold is the
  middle candidate of the first (lowest) run of best-scoring candidates.
  """
  values = [*negatives, *positives]
  first = math.floor(min(values) / step)
  last = math.ceil(max(values) / step) + 1
  grid = [round(k * step, 6) for k in range(first, last + 1)]

  def score(t: float) -> tuple[float, float, float]:
    fpr = sum(x >= t for x in negatives) / len(negatives)
    recall = sum(x >= t for x in positives) / len(positives)
    return recall - fpr, fpr, recall

  scores = [score(t)[0] for t in grid]
  best = max(scores)
  start = scores.index(best)
  stop = start
  while stop + 1 < len(grid) and scores[stop + 1] == best:
    stop += 1
  threshold = grid[(start + stop) // 2]
  _, fpr, recall = score(threshold)
  return {
      'threshold': threshold,
      'false_positive_rate': fpr,
      'recall': recall,
      'best_range': [grid[start], grid[stop]],
  }


def calibrate(
    trajs: Sequence[trajectory.Trajectory],
    config: degeneration.DegenerationConfig,
    periods: Sequence[int],
    loop_lengths: Sequence[int],
    seed: int = 0,
) -> dict[str, Any]:
  """Ratio distributions of real and looped trajectories, and a threshold.

  Returns:
    {'real': quantiles, 'looped': [{period, loop_chars (actual looped
    region), ratios, caught}], 'choice': choose_threshold(...) over variants
    whose looped region fills a window, 'config': the window settings}.
  """
  real = ratios(trajs, config)
  variants, positives, seen = [], [], set()
  for loop_chars in loop_lengths:
    for period in periods:
      actual = period * repeats_for(period, loop_chars)
      if (period, actual) in seen:
        continue
      seen.add((period, actual))
      looped = [loop_variant(t, period, loop_chars, seed) for t in trajs]
      values = ratios(looped, config)
      if actual >= config.window_bytes:
        positives.extend(values)
      variants.append(
          {
              'period': period,
              'loop_chars': actual,
              'ratios': stage_result.quantiles(values),
              '_values': values,
          }
      )
  if not positives:
    raise ValueError(
        f'no loop length >= window_bytes={config.window_bytes}: give longer'
        ' loop_lengths to calibrate on'
    )
  choice = choose_threshold(real, positives)
  for v in variants:
    values = v.pop('_values')
    v['caught'] = sum(x >= choice['threshold'] for x in values) / len(values)
  return {
      'n_trajectories': len(trajs),
      'real': stage_result.quantiles(real),
      'real_flagged': sum(x >= choice['threshold'] for x in real),
      'looped': variants,
      'choice': choice,
      'config': {
          'window_bytes': config.window_bytes,
          'stride_bytes': config.stride_bytes,
          'zlib_level': config.zlib_level,
      },
  }
