"""Query-focused snippets (open-recipe.md) and best windows for a goal.

A snippet is built from a document's stored text: 64-word sliding windows
are scored with BM25 over the query's terms (analyzed like the index), and
windows that contain an exact quoted phrase (case- and punctuation-
insensitive word match) rank first. Within the best window the excerpt of
at most 48 words with the best score is kept and then, where the budget
allows, grown to whole sentences (the sentences around the matches, then
the next, then the previous); when no run of whole sentences within budget
holds as many quoted phrases as the window (a phrase across a sentence
end), the best budget-word span is kept instead. A document with no match
yields its lead.

Windows are only evaluated where they start at a match or end at one (a
window elsewhere cannot score higher), so cost is linear in the matches.
IDF comes from the corpus (`idf`, e.g. the backend's doc view) or, when
none is given, from the document itself: sentences as the collection.

What does not depend on the query (the text's words, their lowercase form,
its sentence ends) is kept in a bounded LRU keyed by the text itself
(`DocumentCache`), so a document cut again for another query is not
re-split; a changed text is another key.
"""

import bisect
import collections
import dataclasses
import functools
import math
import re
from re import _casefix
import threading
from typing import Callable, Mapping, Sequence

from search_agent.search import analysis
from search_agent.search.analysis import QueryAnalyzer

# The end of a sentence: terminal punctuation before whitespace, or a line
# break (the match starts inside the sentence's last word). A text without
# line-end marks is scanned with the first alternative alone (the same
# matches, twice as fast).
_PUNCT_END = '[.!?]["\')\\]]*(?= |$)'
_SENTENCE_END_RE = re.compile(_PUNCT_END + '|\ue000')
_PUNCT_END_RE = re.compile(_PUNCT_END)

IdfFn = Callable[[Sequence[str]], Mapping[str, float]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SnippetConfig:
  """How snippets are cut.

  Attributes:
    window_words: Width of the BM25-scored sliding windows (seed: 64).
    max_words: Longest excerpt in words (seed: 48).
    k1: BM25 term-frequency saturation.
    b: BM25 length normalization (windows shorter than `window_words`,
      at the end of short documents, are normalized against it).
  """

  window_words: int = 64
  max_words: int = 48
  k1: float = 1.2
  b: float = 0.75


@dataclasses.dataclass(frozen=True, kw_only=True)
class Window:
  """A span of a document's words.

  Attributes:
    start: Index of the first word.
    end: One past the last word.
    text: The words joined by single spaces.
    score: (number of quoted phrases inside, BM25) — compared in order.
  """

  start: int
  end: int
  text: str
  score: tuple[int, float]


class _Text:
  """What snippets need of a text whatever the query (`DocumentCache`).

  Attributes:
    words: The whitespace-split words (line ends marked).
    norm: The words joined by single spaces.
    lower: `norm` lowercased, when each character lowercases to one
      (same offsets; see `_EXTRA_CASES`), else None.
    sentence_re: The sentence-end pattern for this text.
    reused: Whether the cache has handed this entry out before.
  """

  def __init__(self, text: str):
    if '\n' in text:
      text = _mark_line_ends(text)
    self.words = text.split()
    self.norm = ' '.join(self.words)
    lower = self.norm.lower()
    same = len(lower) == len(self.norm) and '\u03a3' not in self.norm
    self.lower = lower if same else None
    has_mark = _LINE_END in self.norm
    self.sentence_re = _SENTENCE_END_RE if has_mark else _PUNCT_END_RE
    self.reused = False

  @functools.cached_property
  def sentence_ends(self) -> list[int]:
    """Word indexes that end a sentence, ascending (the whole text)."""
    return _ends_in(self, 0, len(self.words) - 1)

  @functools.cached_property
  def sentences(self) -> list[tuple[int, int]]:
    """[start, end) word spans of all sentences (read-only)."""
    starts = [0] + [e + 1 for e in self.sentence_ends[:-1]]
    return list(zip(starts, (e + 1 for e in self.sentence_ends)))


def _mark_line_ends(text: str) -> str:
  """`_LINE_END_RE.sub('\\1' + _LINE_END + ' ', text)` up to whitespace,
  ~10x faster: a line whose last non-blank character is not whitespace
  gets the mark after it. (What follows is split on whitespace.)"""
  lines = text.split('\n')
  for i in range(len(lines) - 1):
    line = lines[i].rstrip(' \t\r\f\v')
    if line and not line[-1].isspace():
      lines[i] = line + _LINE_END
  return '\n'.join(lines)


class DocumentCache:
  """A bounded LRU of `_Text`s, keyed by the text itself (thread-safe).

  Keying by content, not by doc id, means an entry can never be stale: a
  document whose text changed is looked up under its new text, and the old
  entry ages out. `max_docs=0` keeps nothing; a text over `max_chars` is
  analyzed but not kept (an entry holds ~13 bytes a character).
  """

  def __init__(self, max_docs: int = 512, max_chars: int = 20_000):
    self.max_docs, self.max_chars = max_docs, max_chars
    self.hits = self.misses = 0
    self._entries: collections.OrderedDict[str, _Text] = (
        collections.OrderedDict()
    )
    self._lock = threading.Lock()

  def get(self, text: str) -> _Text:
    """The entry of `text`, made (and kept, evicting the oldest) if new."""
    with self._lock:
      entry = self._entries.get(text)
      if entry is not None:
        self._entries.move_to_end(text)
        self.hits += 1
        entry.reused = True
        return entry
      self.misses += 1
    entry = _Text(text)
    if self.max_docs > 0 and len(text) <= self.max_chars:
      with self._lock:
        self._entries[text] = entry
        while len(self._entries) > self.max_docs:
          self._entries.popitem(last=False)
    return entry

  def __len__(self) -> int:
    return len(self._entries)

  def clear(self) -> None:
    with self._lock:
      self._entries.clear()
      self.hits = self.misses = 0


# The process's snippet cache (`make_snippet`'s default): ~20 KB per
# 1,600-character document, at most ~260 KB per kept text.
DOCUMENT_CACHE = DocumentCache()


@dataclasses.dataclass(frozen=True)
class _Doc:
  text: _Text
  positions: dict[str, list[int]]  # query term -> word indexes, ascending
  phrase_spans: list[tuple[int, int]]  # (first, last) word of each phrase

  @property
  def words(self) -> list[str]:
    return self.text.words

  @property
  def sentence_ends(self) -> list[int]:
    return self.text.sentence_ends


# Abbreviations whose period does not end a sentence (lowercased, no dot).
# An initial ("J.") or a dotted abbreviation ("B.A.", "Ph.D.", "e.g.").
_INITIAL_OR_DOTTED_RE = re.compile(r'[^\W\d_]\.|(?:[^\W\d_]+\.){2,}')
_ABBREVIATIONS = frozenset(
    'al approx b c ca capt cf co col corp d dr ed eds est fig fl ft gen hon'
    ' ibid inc jr lit lt ltd mr mrs ms mt no op pp prof rev sgt sr st vol vs'
    ' jan feb mar apr jun jul aug sep sept oct nov dec'.split()
)
# re.I compares a character's simple lowercase with the pattern's, and
# also accepts these extra equivalents of a lowercase pattern character
# (i: ı, s: ſ, σ: ς, ...). A text is matched in its lowercase copy without
# re.I when str.lower() kept its length and it has no Σ (then each copied
# character is the simple lowercase: only İ and final sigma map
# otherwise) and it holds none of the query's extra equivalents
# (tests/search/test_snippets.py checks this over all of Unicode).
_EXTRA_CASES = {
    chr(k): tuple(map(chr, v)) for k, v in _casefix._EXTRA_CASES.items()  # pylint: disable=protected-access
}
# Marks a word that ends a line (a sentence end): a private-use character,
# neither whitespace nor a letter.
_LINE_END = '\ue000'
_LINE_END_RE = re.compile(r'(\S)[ \t\r\f\v]*\n')


@functools.lru_cache(maxsize=8192)
def _bounded(pattern: str) -> re.Pattern:
  """`pattern` as whole tokens (not inside a run of letters/digits)."""
  return re.compile(rf'(?<![^\W_])(?:{pattern})(?![^\W_])', re.I)


class _WordCounter:
  """Word index of ascending offsets into single-space-joined words."""

  def __init__(self, norm: str, offset: int = 0, index: int = 0):
    """`index` is the word index of `offset` (a word's first character)."""
    self._norm, self._offset, self._index = norm, offset, index
    self._start = (offset, index)

  def __call__(self, offset: int) -> int:
    if offset < self._offset:  # not ascending: count from the start
      self._offset, self._index = self._start
    self._index += self._norm.count(' ', self._offset, offset)
    self._offset = offset
    return self._index


@functools.lru_cache(maxsize=8192)
def _prefix_pattern(prefixes: tuple[str, ...]) -> re.Pattern:
  """Whole tokens that start with one of `prefixes` (case-insensitive)."""
  alternation = '|'.join(map(re.escape, sorted(prefixes, key=len)[::-1]))
  return re.compile(rf'(?<![^\W_])(?:{alternation})[^\W_]*', re.I)


@functools.lru_cache(maxsize=8192)
def _lower_prefix_pattern(prefixes: tuple[str, ...]) -> re.Pattern:
  """`_prefix_pattern` for a `_Text.lower` copy, without the look-behind:
  a match inside a token (after a letter/digit) is the caller's to drop.
  The look-behind and re.I made the scan ~6x slower."""
  alternation = '|'.join(map(re.escape, sorted(prefixes, key=len)[::-1]))
  return re.compile(rf'(?:{alternation})[^\W_]*')


@functools.lru_cache(maxsize=8192)
def _lower_bounded(pattern: str) -> re.Pattern:
  """`_bounded` for a `_Text.lower` copy and lowercase tokens (no re.I)."""
  return re.compile(rf'(?<![^\W_])(?:{pattern})(?![^\W_])')


@functools.lru_cache(maxsize=8192)
def _extra_pairs(tokens: tuple[str, ...]) -> tuple[str, ...] | None:
  """re.I's extra equivalents of the tokens' characters as pairs x + c: re.I
  matches the tokens' character c also to a text's x (lowercased); None
  when a token is not lowercase letters/digits (then only re.I matches
  like re.I)."""
  if not all(t.isalnum() and t == t.lower() for t in tokens):
    return None
  chars = set(''.join(tokens))
  return tuple(sorted({x + c for c in chars for x in _EXTRA_CASES.get(c, ())}))


@functools.lru_cache(maxsize=8192)
def _extra_cases(tokens: tuple[str, ...]) -> tuple[str, ...] | None:
  """The text characters of `_extra_pairs`; None as there."""
  pairs = _extra_pairs(tokens)
  return None if pairs is None else tuple(sorted({p[0] for p in pairs}))


def _lowercase_safe(lower: str | None, tokens: tuple[str, ...]) -> bool:
  """Whether `tokens` can be matched in the `_Text.lower` copy `lower`."""
  if lower is None:
    return False
  extra = _extra_cases(tokens)
  return extra is not None and not any(x in lower for x in extra)


@functools.lru_cache(maxsize=8192)
def _prefixes(query_terms: tuple[str, ...]) -> tuple[str, ...]:
  return tuple(sorted({t[:-1] if len(t) > 2 else t for t in query_terms}))


def _analyze(entry: _Text, query_terms, phrases, analyzer) -> _Doc:
  """Locates query terms and phrases in a text.

  The text is reduced to its words joined by single spaces (line ends
  marked), so a character offset maps to a word index by counting spaces
  (in C). Candidate tokens are found with one regex: tokens starting with
  a query term minus its last letter (the English stemmer rewrites
  suffixes only, and y→i at the end); each candidate is analyzed (cached)
  and kept if its term is a query term. Python work is per candidate, not
  per word. Irregular forms whose stem is not a prefix (dying → die) are
  not found. Where text and terms allow (`_EXTRA_CASES`), the lowercase
  copy is matched without re.I: the same matches, ~5x faster.
  """
  norm, low = entry.norm, entry.lower
  positions: dict[str, list[int]] = {t: [] for t in query_terms}
  if positions:
    prefixes = _prefixes(query_terms)
    if _lowercase_safe(low, prefixes):
      term_of, slot, count = analyzer.term, positions.get, low.count
      offset = word = 0  # word index by counting spaces, ascending
      for m in _lower_prefix_pattern(prefixes).finditer(low):
        start = m.start()
        if start and low[start - 1].isalnum():
          continue  # inside a token: the look-behind's case
        ps = slot(term_of(m.group()))
        if ps is not None:
          word += count(' ', offset, start)
          offset = start
          ps.append(word)
    else:
      index = _WordCounter(norm)
      for m in _prefix_pattern(prefixes).finditer(norm):
        term = analyzer.term(m.group().lower())
        if term in positions:
          positions[term].append(index(m.start()))
  spans = []
  for phrase in phrases:
    toks = analysis.raw_tokens(phrase)
    if toks:
      joined = r'[\W_]+'.join(map(re.escape, toks))
      if _lowercase_safe(low, tuple(toks)):
        text, pattern = low, _lower_bounded(joined)
      else:
        text, pattern = norm, _bounded(joined)
      index = _WordCounter(text)
      for m in pattern.finditer(text):
        spans.append((index(m.start()), index(m.end() - 1)))
  return _Doc(entry, positions, sorted(spans))


def _ends_in(doc: _Text, lo: int, hi: int) -> list[int]:
  """Sentence ends among words [lo, hi] (the last word always ends one).

  Only that stretch of the text is scanned: a snippet needs the sentences
  around its best window, not those of the whole document.
  """
  words, norm = doc.words, doc.norm
  if not words or hi < lo:
    return []
  pos = sum(map(len, words[:lo])) + lo
  last = len(words) - 1
  endpos = len(norm)
  if hi < last:  # through word hi and the space after it
    endpos = pos + sum(map(len, words[lo : hi + 1])) + hi - lo + 1
  ends, count, offset, word = [], norm.count, pos, lo
  for m in doc.sentence_re.finditer(norm, pos, endpos):
    start = m.start()
    if norm[start] == '.' and not _period_ends_sentence(norm, start):
      continue
    word += count(' ', offset, start)  # word index, ascending
    offset = start
    ends.append(word)
  if hi >= last and (not ends or ends[-1] != last):
    ends.append(last)
  return sorted(set(ends))


def _period_ends_sentence(norm: str, start: int) -> bool:
  """Whether the period at `norm[start]` (a sentence-end match) ends one.

  A line end or '!'/'?' always does (the caller's). A period does not
  after an initial ("J."), a dotted abbreviation ("B.A.", "Ph.D.",
  "e.g."), a known abbreviation ("c.", "ibid.", "lit.", "Dr.", "St.", ...).
  """
  word = norm[norm.rfind(' ', 0, start) + 1 : start + 1]
  word = word.lstrip('(["\'').lower()
  if _INITIAL_OR_DOTTED_RE.fullmatch(word):
    return False
  return word[:-1] not in _ABBREVIATIONS


def _join(doc: _Doc, lo: int, hi: int) -> str:
  return ' '.join(doc.words[lo:hi]).replace(_LINE_END, '')


def _local_idf(doc: _Doc) -> dict[str, float]:
  """BM25 idf with the document's sentences as the collection."""
  n = len(doc.sentence_ends)
  idf = {}
  for t, ps in doc.positions.items():
    df = len({bisect.bisect_left(doc.sentence_ends, p) for p in ps})
    idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
  return idf


class _Scorer:
  """BM25 (+ phrase count) of any word span, from match positions."""

  def __init__(self, doc: _Doc, idf: Mapping[str, float], config):
    self.config = config
    self.positions = doc.positions
    self.idf = idf
    self.phrase_spans = doc.phrase_spans
    self.match_positions = sorted(
        {p for ps in self.positions.values() for p in ps}
        | {s for s, _ in self.phrase_spans}
    )
    # (idf, positions) of the terms that occur, in `positions` order (the
    # sum's order, so scores are bit-identical to a loop over all terms).
    self._weighted = [
        (idf.get(t, 0.0), ps) for t, ps in self.positions.items() if ps
    ]

  def first_match(self, lo: int, hi: int) -> int | None:
    """The first match position in [lo, hi), if any."""
    i = bisect.bisect_left(self.match_positions, lo)
    if i < len(self.match_positions) and self.match_positions[i] < hi:
      return self.match_positions[i]
    return None

  def score(
      self, start: int, end: int, fixed_length: bool = False
  ) -> tuple[int, float]:
    """(phrases inside, BM25); `fixed_length` drops length normalization."""
    c = self.config
    length = c.window_words if fixed_length else end - start
    norm = c.k1 * (1 - c.b + c.b * length / c.window_words)
    k1_plus_1, left = c.k1 + 1, bisect.bisect_left
    bm25 = 0.0
    for idf, ps in self._weighted:
      tf = left(ps, end) - left(ps, start)
      if tf:
        bm25 += idf * tf * k1_plus_1 / (tf + norm)
    if not self.phrase_spans:
      return 0, bm25
    phrases = sum(1 for s, e in self.phrase_spans if start <= s and e < end)
    return phrases, bm25

  def scores(
      self, starts: Sequence[int], width: int, ends: Sequence[int] = ()
  ) -> list:
    """`score(s, s + width)` for each of `starts`, one term at a time, or
    with `ends`, `score(s, e, fixed_length=True)` (then `width` must be
    `window_words`).

    The same operations in the same order as `score` (bit-identical),
    without its per-window call and loop overhead.
    """
    c = self.config
    norm = c.k1 * (1 - c.b + c.b * width / c.window_words)
    k1_plus_1, left = c.k1 + 1, bisect.bisect_left
    ends = ends or [s + width for s in starts]
    bm25 = [0.0] * len(starts)
    for idf, ps in self._weighted:
      tfs = [left(ps, e) - left(ps, s) for s, e in zip(starts, ends)]
      bm25 = [
          b + idf * tf * k1_plus_1 / (tf + norm) if tf else b
          for b, tf in zip(bm25, tfs)
      ]
    if not self.phrase_spans:
      return [(0, b) for b in bm25]
    spans = self.phrase_spans
    return [
        (sum(1 for ps, pe in spans if s <= ps and pe < e), b)
        for s, e, b in zip(starts, ends, bm25)
    ]

  def best_span(self, lo: int, hi: int, width: int) -> tuple[int, int]:
    """The best `width`-word span inside [lo, hi), earliest on ties."""
    if hi - lo <= width:
      return lo, hi
    starts = {lo}
    for p in self.match_positions:
      if lo <= p < hi:
        starts.add(min(p, hi - width))
        starts.add(max(lo, p - width + 1))
    starts = sorted(starts)
    scores = self.scores(starts, width)
    best = starts[max(range(len(starts)), key=scores.__getitem__)]
    return best, best + width


@functools.lru_cache(maxsize=4096)
def _query_terms(analyzer, terms: tuple[str, ...], phrases: tuple[str, ...]):
  """The index terms of a query's words and phrases, sorted: the BM25 sum
  runs in this order, so scores (and near-ties) do not vary with the
  process's string hash seed. Cached: a query is cut for k documents."""
  query_terms = set(analyzer.terms(' '.join(terms)))
  for phrase in phrases:
    query_terms.update(analyzer.terms(phrase))
  return tuple(sorted(query_terms))


def _prepare(text, terms, phrases, analyzer, idf, config, cache):
  query_terms = _query_terms(analyzer, tuple(terms), tuple(phrases))
  entry = cache.get(text) if cache is not None else _Text(text)
  doc = _analyze(entry, query_terms, phrases, analyzer)
  weights = dict(idf(list(query_terms))) if idf else _local_idf(doc)
  return doc, _Scorer(doc, weights, config)


def _region_sentences(doc: _Doc, w_lo: int, w_hi: int, budget: int):
  """The sentences a snippet around window [w_lo, w_hi) can use.

  Excerpts grow from the sentences meeting the window by at most `budget`
  words either way, so only the ends in [w_lo - budget - 1, w_hi + budget]
  matter, provided one of them closes the sentence before the window and
  one the sentence at its end (else a sentence over the budget could
  reach outside: the whole text is segmented). Returns complete sentences
  as `_sentences` does, those whose start lies outside left out.
  """
  n = len(doc.words)
  lo, hi = max(0, w_lo - budget - 1), min(n - 1, w_hi + budget)
  entry = doc.text
  # A text already segmented, or cut before (it is likely to be again),
  # uses (and keeps) the whole text's sentence ends.
  if entry.reused or 'sentence_ends' in entry.__dict__:
    return entry.sentences
  if lo == 0 and hi == n - 1:
    return _sentences(doc, 0, n)
  ends = _ends_in(entry, lo, hi)
  left_ok = lo == 0 or (ends and ends[0] < w_lo)
  right_ok = hi == n - 1 or (ends and ends[-1] >= w_hi - 1)
  if not (left_ok and right_ok):
    return _sentences(doc, 0, n)
  starts = [0] if lo == 0 else []
  starts += [e + 1 for e in ends[:-1]]
  return list(zip(starts, (e + 1 for e in ends[len(ends) - len(starts) :])))


def _sentences(doc: _Doc, lo: int, hi: int) -> list[tuple[int, int]]:
  """[start, end) word spans of the sentences that intersect [lo, hi)."""
  k = bisect.bisect_left(doc.sentence_ends, lo)
  start = doc.sentence_ends[k - 1] + 1 if k else 0
  out = []
  while k < len(doc.sentence_ends) and start < hi:
    out.append((start, doc.sentence_ends[k] + 1))
    start = doc.sentence_ends[k] + 1
    k += 1
  return out


def _candidates(scorer, sentences, first: int, last: int, budget: int):
  """Excerpts to choose from, one per sentence i in [first, last].

  From sentence i: the longest run of whole sentences that fits the budget,
  grown forward first and then backward; a sentence longer than the
  budget contributes its best budget-word span instead.
  """
  for i in range(first, last + 1):
    s, e = sentences[i]
    if e - s > budget:
      yield scorer.best_span(s, e, budget)
      continue
    j = i
    while j + 1 < len(sentences) and sentences[j + 1][1] - s <= budget:
      j += 1
      e = sentences[j][1]
    h = i
    while h > 0 and e - sentences[h - 1][0] <= budget:
      h -= 1
      s = sentences[h][0]
    yield s, e


@dataclasses.dataclass(frozen=True, kw_only=True)
class SnippetQuery:
  """What a snippet cutter outside this module needs of one query to cut
  `make_snippet`'s snippets (the Lucene backend's, in Java:
  index/lucene_views/.../Snippets.java), computed once per query.

  Attributes:
    terms: The query's index terms, sorted: the BM25 sum's order.
    idf: Each term's corpus idf (0.0 where the idf has none).
    phrases: Each quoted phrase's tokens (`analysis.raw_tokens`), those
      without tokens left out.
    prefixes: What a candidate word starts with (`_prefixes`).
    extra_cases: re.I's extra case equivalents of the prefixes' and the
      phrase tokens' characters, as pairs x + c (`_extra_pairs`): in a
      lowercased text x also matches the query's c, as re.I matches it
      (so ı matches i, ſ matches s).
    config: Window and excerpt sizes, BM25 k1 and b.
  """

  terms: tuple[str, ...]
  idf: tuple[float, ...]
  phrases: tuple[tuple[str, ...], ...]
  prefixes: tuple[str, ...]
  extra_cases: str
  config: SnippetConfig


def snippet_query(
    terms: Sequence[str],
    phrases: Sequence[str],
    analyzer: QueryAnalyzer,
    idf: IdfFn | None,
    config: SnippetConfig = SnippetConfig(),
) -> SnippetQuery | None:
  """A query's `SnippetQuery`, or None where only `make_snippet` cuts its
  snippets: document-local idf (no `idf`), or a prefix or phrase token that
  is not lowercase letters/digits (then the text is matched with re.I)."""
  if idf is None:
    return None
  query_terms = _query_terms(analyzer, tuple(terms), tuple(phrases))
  prefixes = _prefixes(query_terms)
  tokens = tuple(t for t in map(tuple, map(analysis.raw_tokens, phrases)) if t)
  extra = set()
  for group in (prefixes, *tokens):
    pairs = _extra_pairs(group)
    if pairs is None:
      return None
    extra.update(pairs)
  weights = dict(idf(list(query_terms)))
  return SnippetQuery(
      terms=query_terms,
      idf=tuple(weights.get(t, 0.0) for t in query_terms),
      phrases=tokens,
      prefixes=prefixes,
      extra_cases=''.join(sorted(extra)),
      config=config,
  )


def make_snippet(
    text: str,
    terms: Sequence[str],
    phrases: Sequence[str],
    analyzer: QueryAnalyzer,
    idf: IdfFn | None = None,
    config: SnippetConfig = SnippetConfig(),
    cache: DocumentCache | None = DOCUMENT_CACHE,
) -> str:
  """A contiguous excerpt of at most `config.max_words` words.

  The best `window_words` window is found first; the excerpt is then the
  best-scoring run of whole sentences around it that fits the budget
  (ties: the run that starts closest before its first match, then the
  earliest), or, for a sentence over budget, its best budget-word span.

  Args:
    text: The document's stored text.
    terms: Query keywords (`ParsedQuery.terms`).
    phrases: Quoted phrases (`ParsedQuery.phrases`); windows holding them
      rank first.
    analyzer: Analyzer matching the index (stemming, stopwords).
    idf: Maps index terms to corpus idf; None → document-local idf.
    config: Window and excerpt sizes.
    cache: Where the text's query-independent analysis is kept; None:
      nowhere. The output is the same either way.

  Returns:
    The excerpt; the document's lead when nothing matches; '' if empty.
  """
  doc, scorer = _prepare(text, terms, phrases, analyzer, idf, config, cache)
  budget = config.max_words
  if not doc.words:
    return ''
  if not scorer.match_positions:
    sentences = _region_sentences(doc, 0, 0, budget)
    lo, hi = next(_candidates(scorer, sentences, 0, 0, budget))
    return _join(doc, lo, hi)
  w_lo, w_hi = scorer.best_span(0, len(doc.words), config.window_words)
  sentences = _region_sentences(doc, w_lo, w_hi, budget)

  ends = [e for _, e in sentences]
  first = bisect.bisect_right(ends, w_lo)
  last = bisect.bisect_left(ends, w_hi)
  spans = list(_candidates(scorer, sentences, first, last, budget))
  los, his = [s for s, _ in spans], [e for _, e in spans]
  keys = []
  for (lo, hi), score in zip(
      spans, scorer.scores(los, config.window_words, his)
  ):
    match = scorer.first_match(lo, hi)
    lead = match - lo if match is not None else budget
    keys.append((*score, -lead, -lo))
  lo, hi = spans[max(range(len(spans)), key=keys.__getitem__)]
  # Phrases first: a phrase no run of whole sentences within budget holds
  # (one spanning a sentence end) is kept by cutting sentences. (Without
  # phrases both counts are 0: nothing to cut.)
  if scorer.phrase_spans:
    cut = scorer.best_span(w_lo, w_hi, budget)
    if scorer.score(*cut)[0] > scorer.score(lo, hi)[0]:
      lo, hi = cut
  return _join(doc, lo, hi)


def best_windows(
    text: str,
    goal: str,
    analyzer: QueryAnalyzer,
    *,
    top_n: int = 3,
    idf: IdfFn | None = None,
    config: SnippetConfig = SnippetConfig(),
    cache: DocumentCache | None = None,
) -> list[Window]:
  """The `top_n` best non-overlapping BM25 windows of `text` for a goal.

  This is the visit tool's extractive fallback when no LLM is configured.
  Quoted phrases in the goal count as phrases. Windows are returned in
  score order; none when no word of the goal occurs in the text. A visited
  page is read once, so no cache by default (`cache=` as `make_snippet`).
  """
  parts = goal.replace('\u201c', '"').replace('\u201d', '"').split('"')
  phrases = [p for p in parts[1::2] if p.strip()]
  terms = analysis.raw_tokens(' '.join(parts[0::2]))
  doc, scorer = _prepare(text, terms, phrases, analyzer, idf, config, cache)
  width = config.window_words
  starts = {0}
  for p in scorer.match_positions:
    starts.add(max(0, min(p, len(doc.words) - width)))
    starts.add(max(0, p - width + 1))
  starts = sorted(starts)
  scored = sorted(
      zip(scorer.scores(starts, width), starts),
      key=lambda x: (-x[0][0], -x[0][1], x[1]),
  )
  out: list[Window] = []
  for score, s in scored:
    if len(out) == top_n or score == (0, 0.0):
      break
    e = min(s + width, len(doc.words))
    if any(s < w.end and w.start < e for w in out):
      continue
    out.append(Window(start=s, end=e, text=_join(doc, s, e), score=score))
  return out
