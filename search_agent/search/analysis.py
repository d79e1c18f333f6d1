"""The English text analysis shared by indexing, querying and snippets.

Tokens are maximal runs of letters/digits (tantivy's `simple` tokenizer),
lowercased, with tokens longer than 40 bytes dropped, then optionally
English stopwords removed and the Snowball English stemmer applied.

The stopword list is Lucene's `EnglishAnalyzer` default (Elasticsearch's
`_english_`), so the OpenSearch backend can use the same list. Remaining
differences from Elasticsearch's `english` analyzer: Snowball (Porter2) here
vs Porter there, and "john's" is two tokens here ("john", "s") where the
possessive filter there keeps "john".
"""

import re

import tantivy

ANALYZER_NAME = 'en_search'
MAX_TOKEN_BYTES = 40
ENGLISH_STOPWORDS = (
    'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if',
    'in', 'into', 'is', 'it', 'no', 'not', 'of', 'on', 'or', 'such', 'that',
    'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was',
    'will', 'with',
)  # fmt: skip
_TOKEN_RE = re.compile(r'[^\W_]+')


def build_analyzer(*, stem: bool, remove_stopwords: bool):
  """The tantivy TextAnalyzer for the analyzed fields."""
  builder = (
      tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
      .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
      .filter(tantivy.Filter.lowercase())
  )
  if remove_stopwords:
    builder = builder.filter(
        tantivy.Filter.custom_stopword(list(ENGLISH_STOPWORDS))
    )
  if stem:
    builder = builder.filter(tantivy.Filter.stemmer('english'))
  return builder.build()


def raw_tokens(text: str) -> list[str]:
  """Lowercased tokens at their positions, before stopwords and stemming.

  Matches the positions tantivy's `simple` tokenizer assigns, so that
  phrase queries can be built with the right offsets.
  """
  return _TOKEN_RE.findall(text.lower())


class QueryAnalyzer:
  """Turns query words into index terms, with a per-word cache.

  Thread-safe for concurrent reads (the cache is a plain dict; a race
  computes the same value twice).
  """

  def __init__(self, *, stem: bool, remove_stopwords: bool):
    self._analyzer = build_analyzer(
        stem=stem, remove_stopwords=remove_stopwords
    )
    self._cache: dict[str, str | None] = {}

  def term(self, word: str) -> str | None:
    """The index term of one raw token, None if it is dropped."""
    if word in self._cache:
      return self._cache[word]
    out = self._analyzer.analyze(word)
    term = out[0] if len(out) == 1 else None
    if len(self._cache) < 1_000_000:
      self._cache[word] = term
    return term

  def terms(self, text: str) -> list[str]:
    """Index terms of a text, in order, dropped tokens left out."""
    return [t for t in map(self.term, raw_tokens(text)) if t is not None]

  def phrase(self, text: str) -> list[tuple[int, str]]:
    """(position, term) pairs of a phrase, positions relative to its start.

    Dropped tokens (stopwords) leave gaps, as they do in the index.
    """
    return [
        (i, t)
        for i, t in enumerate(map(self.term, raw_tokens(text)))
        if t is not None
    ]
