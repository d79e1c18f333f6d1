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

  def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
    idx = np.searchsorted(self.cdf, rng.random(n), side='right')
    return self.words[np.minimum(idx, len(self.words) - 1)]


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
    words = vocab.sample(rng, int(lengths.sum() + title_lengths.sum()))
    hosts = rng.integers(0, spec.domains, size=batch)
    pos = 0
    for i in range(min(batch, spec.num_docs - first)):
      title = ' '.join(words[pos : pos + title_lengths[i]])
      pos += title_lengths[i]
      body = words[pos : pos + lengths[i]].tolist()
      pos += lengths[i]
      for j in range(spec.sentence_words - 1, len(body), spec.sentence_words):
        body[j] += '.'
      doc_id = f'syn-{first + i}'
      yield Document(
          doc_id=doc_id,
          title=title.title(),
          url=f'https://site{hosts[i]}.example.org/{doc_id}',
          text=' '.join(body),
      )


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
