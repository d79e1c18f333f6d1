"""A deterministic synthetic corpus for benchmarks (any size, streamed).

Words are drawn i.i.d. from the unigram distribution of the bundled 2Wiki
corpus (its Zipf-shaped vocabulary, case kept); document lengths are 2Wiki
paragraph lengths times `length_scale` (4 → ~287 words, a short web page);
a period ends every `sentence_words`-th word so snippets see sentences;
titles are 2–5 words. Queries of 2–6 words are sampled the same way.
The same seed gives the same corpus on every machine (numpy PCG64).
"""

import collections
import dataclasses
import re
from typing import Iterator

import numpy as np

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document

_WORD_RE = re.compile(r'\w+')
# Sampling looks the uniform draw up in a table of 2**20 equal buckets of
# [0, 1); only draws in a bucket that spans a cdf step (the Zipf tail, ~4%)
# fall back to a binary search. Same indices as searchsorted, ~4x faster.
_BUCKETS = 1 << 20


@dataclasses.dataclass(frozen=True, kw_only=True)
class SyntheticSpec:
  """What to generate.

  Attributes:
    num_docs: Number of documents.
    seed: Random seed.
    length_scale: Multiplier on the sampled 2Wiki paragraph lengths.
    sentence_words: Words per sentence (2Wiki averages ~20).
    domains: Number of synthetic hosts the URLs spread over.
  """

  num_docs: int
  seed: int = 0
  length_scale: int = 4
  sentence_words: int = 20
  domains: int = 1000


class Vocabulary:
  """The 2Wiki unigram distribution and paragraph lengths."""

  def __init__(self):
    counts = collections.Counter()
    self.lengths = []
    for doc in twowiki.read_2wiki():
      words = _WORD_RE.findall(doc.text)
      counts.update(words)
      self.lengths.append(max(1, len(words)))
    ranked = counts.most_common()
    self.words = np.array([w for w, _ in ranked], dtype=object)
    freq = np.array([c for _, c in ranked], dtype=np.float64)
    self.cdf = np.cumsum(freq / freq.sum())
    self.lengths = np.array(self.lengths)
    edges = np.arange(_BUCKETS + 1) / _BUCKETS  # exact: a power of two
    self._first = np.searchsorted(self.cdf, edges[:-1], side='right')
    self._last = np.searchsorted(self.cdf, edges[1:], side='left')

  def sample_indices(self, rng: np.random.Generator, n: int) -> np.ndarray:
    """Indices into `words` of n draws: searchsorted(cdf, u, 'right')."""
    u = rng.random(n)
    bucket = (u * _BUCKETS).astype(np.int64)  # b/B <= u < (b+1)/B exactly
    idx = self._first[bucket]
    step = np.flatnonzero(idx != self._last[bucket])
    idx[step] = np.searchsorted(self.cdf, u[step], side='right')
    return np.minimum(idx, len(self.words) - 1)

  def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
    return self.words[self.sample_indices(rng, n)]


def iter_documents(
    spec: SyntheticSpec, vocab: Vocabulary | None = None
) -> Iterator[Document]:
  """Yields `spec.num_docs` documents, `syn-<i>` in order."""
  vocab = vocab or Vocabulary()
  batch = 1000  # each batch has its own stream: prefixes are stable
  for first in range(0, spec.num_docs, batch):
    rng = np.random.default_rng((spec.seed, first // batch))
    lengths = rng.choice(vocab.lengths, size=batch) * spec.length_scale
    title_lengths = rng.integers(2, 6, size=batch)
    words = _punctuate(
        vocab.sample(rng, int(lengths.sum() + title_lengths.sum())),
        title_lengths, lengths, spec.sentence_words,
    ).tolist()  # fmt: skip
    hosts = rng.integers(0, spec.domains, size=batch).tolist()
    ends = np.cumsum(np.stack([title_lengths, lengths], 1).ravel()).tolist()
    for i in range(min(batch, spec.num_docs - first)):
      doc_id = f'syn-{first + i}'
      start = ends[2 * i - 1] if i else 0
      yield Document(
          doc_id=doc_id,
          title=' '.join(words[start : ends[2 * i]]).title(),
          url=f'https://site{hosts[i]}.example.org/{doc_id}',
          text=' '.join(words[ends[2 * i] : ends[2 * i + 1]]),
      )


def _punctuate(
    words: np.ndarray,
    title_lengths: np.ndarray,
    lengths: np.ndarray,
    sentence_words: int,
) -> np.ndarray:
  """Appends '.' to every `sentence_words`-th body word (titles first)."""
  spans = np.stack([title_lengths, lengths], 1).ravel()
  starts = np.cumsum(spans) - spans
  within = np.arange(len(words)) - np.repeat(starts, spans)
  in_body = np.repeat(np.tile([False, True], len(lengths)), spans)
  ends = np.flatnonzero(
      in_body & (within % sentence_words == sentence_words - 1)
  )
  words[ends] = words[ends] + '.'
  return words


def sample_queries(
    num_queries: int, seed: int = 1, vocab: Vocabulary | None = None
) -> list[str]:
  """Queries of 2–6 words from the same unigram distribution."""
  vocab = vocab or Vocabulary()
  rng = np.random.default_rng(seed)
  lengths = rng.integers(2, 7, size=num_queries)
  words = vocab.sample(rng, int(lengths.sum()))
  out, pos = [], 0
  for n in lengths:
    out.append(' '.join(words[pos : pos + n]))
    pos += n
  return out
