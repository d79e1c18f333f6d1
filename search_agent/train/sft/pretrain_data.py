"""Pretraining data: next-token loss on every token of corpus text.

`data.mode = 'pretrain'` reads a `[{title, text}]` JSON corpus (the bundled
2Wiki corpus). Element i of the source, for i below the number of documents,
is document i as `{title}\\n{text}`; the elements after them (a
`synthetic_fraction` share of the whole) are synthetic sequences that need
copying names from earlier in the text, built from the documents' titles and
seeded by their index (deterministic, so resume is exact):

  * copy:   `copy: T1; T2; T3\\nagain: T1; T2; T3`
  * recall: `facts: T1 = w1; T2 = w2; T3 = w3\\nrecall T2 = w2`, where w is
    the first few words of that document's text.
  * shuffle: `words: v1 ... v12\\nagain: v1 ... v12`, twelve words drawn
    from three documents' texts in random order, so nothing but copying
    predicts the second half.
  * names:  `names: n1 ... n16\nagain: n1 ... n16`, sixteen words drawn
    uniformly from the distinct words of every document's title: name
    pieces (the probe's tokens) in an order no title has, so memorized
    titles do not predict the repeat and only induction (attend to what
    followed the earlier copy of the current token) does.

`data.synthetic_kinds` names the kinds used, in turn (k-th sequence: kind
k mod len(kinds)).

The copy probe (`copy_probe`) measures copying itself: `copy: A; B; C\\nagain:
A; B; C` over the validation documents' titles (names the training
sequences never copy), loss only on the repeated names. Its token-mean NLL is
`copy_nll` in the validation rows: ~4 nats when the model only guesses
names, near 0 once it copies.

A tiny model SFT'd from scratch learns the tool-call template but never
copies the question's entity into its query (../shared/notes/learning); these
sequences exist to form copying (induction) before the tools are seen.

Each text is encoded, `<|im_end|>` appended as the end of the document, and
cut into windows of `seq_len + 1` tokens that overlap by one, so every token
is a target exactly once (nothing is dropped: plain text has no context
policy to respect). The loss mask is all ones.
"""

import json
from typing import Callable

import numpy as np

from search_agent.train import data as data_lib

NAMES_PER_SEQUENCE = 3
RECALL_WORDS = 6
SHUFFLE_WORDS = 12
NAME_WORDS = 16
KINDS = ('copy', 'recall', 'shuffle', 'names')
PROBE_SEQUENCES = 64


class CorpusTexts:
  """Random-access texts: corpus documents, then synthetic sequences."""

  def __init__(
      self,
      path: str,
      lines: tuple[int, int] = (0, 0),
      synthetic_fraction: float = 0.0,
      seed: int = 0,
      kinds: tuple[str, ...] = ('copy', 'recall'),
  ):
    if not 0.0 <= synthetic_fraction < 1.0:
      raise data_lib.DataError(
          f'synthetic_fraction must be in [0, 1), got {synthetic_fraction}'
      )
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
      raise data_lib.DataError(
          f'synthetic_kinds {tuple(kinds)}: use a non-empty tuple of {KINDS}'
      )
    self._kinds = tuple(kinds)
    try:
      with open(path, encoding='utf-8') as f:
        docs = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
      raise data_lib.DataError(f'corpus {path}: {e}') from e
    start, stop = lines
    self._docs = [
        (str(d['title']), str(d['text']))
        for d in docs[start : stop or None]
        if isinstance(d, dict) and d.get('title') and d.get('text')
    ]
    if len(self._docs) < NAMES_PER_SEQUENCE:
      raise data_lib.DataError(
          f'{path} lines {lines} hold {len(self._docs)} {{title, text}}'
          ' documents; pretraining needs at least 3'
      )
    self._title_words = sorted({w for t, _ in self._docs for w in t.split()})
    frac = synthetic_fraction
    self._synthetic = round(len(self._docs) * frac / (1.0 - frac))
    self._seed = seed

  def __len__(self) -> int:
    return len(self._docs) + self._synthetic

  def __getitem__(self, index: int) -> str:
    if index < len(self._docs):
      title, text = self._docs[index]
      return f'{title}\n{text}'
    return self.synthetic(index - len(self._docs))

  @property
  def titles(self) -> list[str]:
    return [title for title, _ in self._docs]

  def synthetic(self, k: int) -> str:
    """The k-th synthetic sequence, of kind kinds[k % len(kinds)]."""
    rng = np.random.default_rng((self._seed, k))
    picks = rng.choice(len(self._docs), NAMES_PER_SEQUENCE, replace=False)
    titles = [self._docs[i][0] for i in picks]
    kind = self._kinds[k % len(self._kinds)]
    if kind == 'copy':
      names = '; '.join(titles)
      return f'copy: {names}\nagain: {names}'
    if kind == 'names':
      picked = rng.choice(len(self._title_words), NAME_WORDS)
      words = ' '.join(self._title_words[i] for i in picked)
      return f'names: {words}\nagain: {words}'
    if kind == 'shuffle':
      pool = [w for i in picks for w in self._docs[i][1].split()]
      words = ' '.join(rng.choice(pool, min(SHUFFLE_WORDS, len(pool))))
      return f'words: {words}\nagain: {words}'
    words = [' '.join(self._docs[i][1].split()[:RECALL_WORDS]) for i in picks]
    facts = '; '.join(f'{t} = {w}' for t, w in zip(titles, words))
    j = int(rng.integers(NAMES_PER_SEQUENCE))
    return f'facts: {facts}\nrecall {titles[j]} = {words[j]}'


def windows(ids, seq_len: int) -> list[data_lib.Example]:
  """Token ids -> examples of <= seq_len targets; every token targeted once."""
  ids = np.asarray(ids, np.int32)
  out = []
  for start in range(0, max(len(ids) - 1, 0), seq_len):
    chunk = ids[start : start + seq_len + 1]
    out.append(
        {
            'inputs': chunk[:-1],
            'targets': chunk[1:],
            'loss_mask': np.ones(len(chunk) - 1, np.int32),
        }
    )
  return out


def example_fn(tokenizer, seq_len: int) -> Callable[[str], list]:
  """Text -> its training windows (the document end token appended)."""
  eos = tokenizer.eos_id

  def examples(text: str) -> list[data_lib.Example]:
    return windows(tokenizer.encode(text) + [eos], seq_len)

  return examples


def copy_probe_texts(titles: list[str], n: int = PROBE_SEQUENCES) -> list[str]:
  """`n` copy sequences over `titles` (fixed draws: comparable across runs)."""
  if len(titles) < NAMES_PER_SEQUENCE:
    raise data_lib.DataError(
        f'the copy probe needs {NAMES_PER_SEQUENCE} titles, got {len(titles)}'
    )
  rng = np.random.default_rng(12345)
  out = []
  for _ in range(n):
    picks = rng.choice(len(titles), NAMES_PER_SEQUENCE, replace=False)
    out.append('; '.join(titles[i] for i in picks))
  return out


def copy_probe_fn(tokenizer, seq_len: int) -> Callable[[str], list]:
  """Names -> the probe example: loss only on the names' second occurrence."""

  def examples(names: str) -> list[data_lib.Example]:
    prefix = tokenizer.encode(f'copy: {names}\nagain:')
    ids = tokenizer.encode(f'copy: {names}\nagain: {names}')
    shared = 0
    while shared < min(len(prefix), len(ids)) and prefix[shared] == ids[shared]:
      shared += 1
    if len(ids) - 1 > seq_len:
      raise data_lib.DataError(
          f'copy probe sequence of {len(ids)} tokens > seq_len {seq_len}'
      )
    ids = np.asarray(ids, np.int32)
    mask = (np.arange(1, len(ids)) >= shared).astype(np.int32)
    return [{'inputs': ids[:-1], 'targets': ids[1:], 'loss_mask': mask}]

  return examples
