"""Query parser: keywords, "quoted phrases" and one site: filter per query.

The grammar (open-recipe.md, "High-Fidelity Local Search Environment"):

  * `"an exact phrase"` — the document must contain the phrase (in the field
    of the view being searched). Curly quotes are read as straight quotes.
  * `site:example.com` — restrict to the host `example.com` and its
    subdomains. At most one per query; a scheme, path or port is dropped.
  * everything else — keywords, split on non-word characters and lowercased
    (stemming is the backend's business).

Backends score on the keywords plus the words of the phrases; phrases are
additionally required. Empty quotes (`""`) are ignored.
"""

import dataclasses
import re

from search_agent.search import sites

DEFAULT_MAX_QUERY_CHARS = 1024

_CURLY_QUOTES = str.maketrans({'\u201c': '"', '\u201d': '"', '\u201e': '"'})
_SITE_RE = re.compile(r'(?i)(?<!\S)site:(\S*)')
_WORD_RE = re.compile(r'\w+')
_DOMAIN_RE = re.compile(r'^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_-]+)*$')


class QueryError(ValueError):
  """A query the parser cannot accept; the message says what to fix."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParsedQuery:
  """One parsed search query.

  Attributes:
    raw: The query text as given.
    terms: Keyword tokens outside quotes, lowercased, not stemmed, in order.
    phrases: Quoted phrases as written (whitespace collapsed), in order.
    site: Domain filter (lowercased, no scheme/path/port), or None.
  """

  raw: str
  terms: tuple[str, ...]
  phrases: tuple[str, ...]
  site: str | None = None

  def phrase_words(self) -> tuple[str, ...]:
    """Lowercased word tokens of all phrases, in order."""
    return tuple(w.lower() for p in self.phrases for w in _WORD_RE.findall(p))

  def scoring_words(self) -> tuple[str, ...]:
    """Keywords plus phrase words: what ranking functions score on."""
    return self.terms + self.phrase_words()


def normalize_site(value: str) -> str:
  """Reduces `https://Sub.Example.com:80/x` to `sub.example.com`.

  Args:
    value: What followed `site:`.

  Returns:
    The lowercased host, non-ASCII labels in their IDNA A-label form
    (`bücher.de` → `xn--bcher-kva.de`), as indexed hosts are.

  Raises:
    QueryError: if nothing usable is left or the host has invalid characters.
  """
  host = value.strip().lower()
  host = re.sub(r'^[a-z][a-z0-9+.-]*://', '', host)
  host = host.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]
  host = host.rsplit('@', 1)[-1].split(':', 1)[0].strip('.')
  host = sites.ascii_host(host)
  if not host:
    raise QueryError(
        f'site: filter {value!r} names no domain; write e.g. site:example.com'
    )
  if not _DOMAIN_RE.match(host):
    raise QueryError(
        f'site: filter {value!r} is not a domain name; write e.g.'
        ' site:example.com'
    )
  return host


def parse_query(
    text: str, max_chars: int = DEFAULT_MAX_QUERY_CHARS
) -> ParsedQuery:
  """Parses one query string.

  Args:
    text: The query as the agent wrote it.
    max_chars: Longest accepted query, in characters.

  Returns:
    The parsed query.

  Raises:
    QueryError: for a non-string, oversized or empty query, an unbalanced
      double quote, a second site: filter or a malformed site: value.
  """
  if not isinstance(text, str):
    raise QueryError(f'a query must be a string, got {type(text).__name__}')
  if len(text) > max_chars:
    raise QueryError(
        f'query is {len(text)} characters long, over the limit of'
        f' {max_chars}; shorten it or split it into several queries'
    )
  norm = text.translate(_CURLY_QUOTES)
  if norm.count('"') % 2:
    raise QueryError(
        f'query {text!r:.120} has an unbalanced double quote; close the'
        ' quoted phrase or remove the quote'
    )
  pieces = norm.split('"')
  outside = ' '.join(pieces[0::2])
  phrases = tuple(
      ' '.join(p.split()) for p in pieces[1::2] if _WORD_RE.search(p)
  )
  sites = _SITE_RE.findall(outside)
  if len(sites) > 1:
    raise QueryError(
        f'query {text!r:.120} has {len(sites)} site: filters; at most one'
        ' is allowed per query (issue several queries instead)'
    )
  site = normalize_site(sites[0]) if sites else None
  outside = _SITE_RE.sub(' ', outside)
  terms = tuple(w.lower() for w in _WORD_RE.findall(outside))
  if not terms and not phrases:
    raise QueryError(
        f'query {text!r:.120} has no keywords or phrases to search for'
    )
  return ParsedQuery(raw=text, terms=terms, phrases=phrases, site=site)
