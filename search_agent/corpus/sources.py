"""One entry point to every corpus format: `CorpusSpec` → documents."""

import dataclasses
import itertools
from typing import Iterator

from search_agent.corpus import browsecomp_plus
from search_agent.corpus import fineweb
from search_agent.corpus import jsonl
from search_agent.corpus import links
from search_agent.corpus import twowiki
from search_agent.corpus import wikipedia
from search_agent.corpus.errors import CorpusError
from search_agent.corpus.record import Document

KINDS = (
    '2wiki',
    'jsonl',
    'wikipedia_xml',
    'fineweb_parquet',
    'browsecomp_plus',
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CorpusSpec:
  """Which corpus to read.

  Attributes:
    kind: One of `KINDS`.
    path: File (or parquet dir); '' means the bundled 2Wiki copy (kind
      '2wiki' only).
    max_docs: Read at most this many documents (0 = all).
    derive_links: Add links from exact title mentions
      (`corpus.links.derive_links`; loads the corpus in memory). Meant for
      corpora without hyperlinks, such as 2Wiki.
  """

  kind: str = '2wiki'
  path: str = ''
  max_docs: int = 0
  derive_links: bool = True

  def __post_init__(self):
    if self.kind not in KINDS:
      raise CorpusError(
          f'unknown corpus kind {self.kind!r}; use one of {KINDS}'
      )
    if not self.path and self.kind != '2wiki':
      raise CorpusError(f'corpus kind {self.kind!r} needs a path')
    if self.max_docs < 0:
      raise CorpusError(f'max_docs must be >= 0, got {self.max_docs}')


def _raw_documents(spec: CorpusSpec) -> Iterator[Document]:
  if spec.kind == '2wiki':
    return iter(twowiki.read_2wiki(spec.path or twowiki.BUNDLED_2WIKI))
  if spec.kind == 'jsonl':
    return jsonl.read_jsonl(spec.path)
  if spec.kind == 'wikipedia_xml':
    return wikipedia.read_wikipedia_xml(spec.path)
  if spec.kind == 'browsecomp_plus':
    return browsecomp_plus.read_browsecomp_plus(spec.path)
  return fineweb.read_fineweb_parquet(spec.path)


def read_corpus(spec: CorpusSpec) -> tuple[Iterator[Document], str]:
  """The documents of a corpus and a note on where its links come from."""
  docs = _raw_documents(spec)
  if spec.max_docs:
    docs = itertools.islice(docs, spec.max_docs)
  if spec.derive_links:
    derived, note = links.derive_links(list(docs))
    return iter(derived), note
  if spec.kind == 'wikipedia_xml':
    return docs, 'links from the [[wikilinks]] of the dump'
  if spec.kind == 'jsonl':
    return docs, 'links as given in the JSONL records'
  return docs, 'no links (the source has none and derivation was off)'
