"""Rehearsal: pretraining texts mixed into SFT's training elements.

SFT on demonstrations alone wears away what pretraining formed: `:learn`'s
pretraining checkpoint scores copy_nll 2.07 nats on the copy probe, its SFT
checkpoint 3.92 (and corpus NLL 2.78 -> 8.23). With `data.rehearsal_path`
set (a `[{title, text}]` corpus, as pretraining reads) and
`data.rehearsal_fraction` = r > 0, r of SFT's training elements per epoch
are pretraining texts (`pretrain_data.CorpusTexts` with the data section's
`synthetic_fraction` and `synthetic_kinds`: loss on every token), the rest
the trajectories as before. A trajectory file of n elements gets
m = round(n r / (1 - r)) texts, a fixed seeded draw over the whole text
source (documents and synthetic sequences alike), the same m every epoch
(deterministic, so resume is exact). Elements, not tokens: a shuffle
sequence is ~40 tokens, a compact demonstration ~420. Validation stays on
trajectories, so its NLL compares with runs without rehearsal.
"""

from typing import Any

import numpy as np

from search_agent.train import data as data_lib


class Mixed:
  """Random-access source: trajectories first, then drawn texts."""

  def __init__(self, trajectories, texts, fraction: float, seed: int):
    if not 0.0 < fraction < 1.0:
      raise data_lib.DataError(
          f'rehearsal_fraction must be in (0, 1) here, got {fraction}'
      )
    self._trajectories = trajectories
    self._texts = texts
    n = len(trajectories)
    m = round(n * fraction / (1.0 - fraction))
    rng = np.random.default_rng((seed, 0x5EED))
    self._drawn = rng.choice(len(texts), m, replace=m > len(texts))

  @property
  def rehearsed(self) -> int:
    """How many texts each epoch holds."""
    return len(self._drawn)

  def __len__(self) -> int:
    return len(self._trajectories) + len(self._drawn)

  def __getitem__(self, index: int) -> Any:
    n = len(self._trajectories)
    if index < n:
      return self._trajectories[index]
    return self._texts[int(self._drawn[index - n])]


def examples_fn(
    trajectory_examples: data_lib.ExamplesFn,
    text_examples: data_lib.ExamplesFn,
) -> data_lib.ExamplesFn:
  """An element -> its examples: texts (str) as pretraining, else SFT."""

  def examples(element) -> list[data_lib.Example]:
    if isinstance(element, str):
      return text_examples(element)
    return trajectory_examples(element)

  return examples
