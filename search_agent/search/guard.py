"""Leakage guard (Iris): keep benchmark-hosting pages away from the agent.

A blocked pattern is `host/path-prefix` (or just `host`). A URL is blocked
when its host equals the pattern's host or is a subdomain of it, and its
path starts with the pattern's path at a segment boundary; scheme, `www.`,
case, query and fragment do not matter. The guard is applied at three
points: search results are filtered (`filter`), visit/open refuse blocked
URLs (`is_blocked`), and a post-hoc check finds blocked URLs anywhere in a
trajectory's tool calls and observations (`check_messages`), including
URLs the model wrote from memory.
"""

import dataclasses
import posixpath
import re
from typing import Any, Callable, Iterable, Sequence, TypeVar
import urllib.parse

from search_agent.search import sites

# The seed's two (Iris): Hugging Face dataset and Space pages; hf.co is the
# same site under its short domain. The Hub API and the dataset viewer's
# server hand out the same data (files, rows, search) under other paths.
DEFAULT_BLOCKED = (
    'huggingface.co/datasets',
    'huggingface.co/spaces',
    'hf.co/datasets',
    'hf.co/spaces',
    'huggingface.co/api/datasets',
    'huggingface.co/api/spaces',
    'hf.co/api/datasets',
    'hf.co/api/spaces',
    'datasets-server.huggingface.co',
)
T = TypeVar('T')


@dataclasses.dataclass(frozen=True, kw_only=True)
class GuardConfig:
  """Leakage guard config_lib.

  Attributes:
    blocked_patterns: `host/path-prefix` patterns (see module doc).
  """

  blocked_patterns: tuple[str, ...] = DEFAULT_BLOCKED


def _split_pattern(pattern: str) -> tuple[str, str]:
  p = re.sub(r'^[a-z]+://', '', pattern.strip().lower())
  host, _, path = p.partition('/')
  if host.startswith('www.'):
    host = host[4:]
  if not host:
    raise ValueError(f'blocked pattern {pattern!r} names no host')
  return host, '/' + path.strip('/') if path.strip('/') else ''


_CACHE_SIZE = 100_000  # URLs whose verdict is kept


class LeakageGuard:
  """Decides which URLs the agent may see or fetch."""

  def __init__(self, config: GuardConfig = GuardConfig()):
    self.config = config
    self._rules = [_split_pattern(p) for p in config.blocked_patterns]
    self._cache: dict[str, bool] = {}
    hosts = sorted({re.escape(host) for host, _ in self._rules})
    # Candidates: a blocked host (or a subdomain), then any port and path;
    # `is_blocked` decides on each.
    self._text_re = (
        re.compile(
            r'(?:https?://)?(?<![\w.-])(?:[\w-]+\.)*(?:'
            + '|'.join(hosts)
            + r')(?![\w-])\.?(?::\d+)?(?:[/\\][^\s"\'<>)\]}]*)?',
            re.I,
        )
        if hosts
        else None
    )

  def is_blocked(self, url: str) -> bool:
    """Whether `url` matches a blocked pattern.

    The URL is read as a browser would: percent-escapes decoded,
    backslashes as slashes, `.`/`..` path segments resolved. Answers are
    cached per URL (the patterns are fixed; a race computes one twice).
    """
    cached = self._cache.get(url)
    if cached is None:
      cached = self._decide(url)
      if len(self._cache) >= _CACHE_SIZE:
        self._cache.clear()
      self._cache[url] = cached
    return cached

  def _decide(self, url: str) -> bool:
    url = urllib.parse.unquote(url.strip()).replace('\\', '/')
    if not re.match(r'^[a-z][a-z0-9+.-]*://', url, re.I):
      url = 'https://' + url
    host = sites.url_host(url)
    if host.startswith('www.'):
      host = host[4:]
    try:
      path = urllib.parse.urlsplit(url).path.lower()
    except ValueError:
      path = ''
    path = '/' + posixpath.normpath('/' + path).strip('/')
    for rule_host, rule_path in self._rules:
      if host == rule_host or host.endswith('.' + rule_host):
        if (
            not rule_path
            or path == rule_path
            or path.startswith(rule_path + '/')
        ):
          return True
    return False

  def filter(
      self, items: Sequence[T], url_of: Callable[[T], str] = lambda h: h.url
  ) -> tuple[list[T], list[T]]:
    """Splits items into (allowed, blocked), order kept."""
    allowed, blocked = [], []
    for item in items:
      (blocked if self.is_blocked(url_of(item)) else allowed).append(item)
    return allowed, blocked

  def find_in_text(self, text: str) -> list[str]:
    """Blocked URLs written anywhere in `text`, in order, deduplicated."""
    if self._text_re is None or not text:
      return []
    found = (m.group().rstrip('.,;:!?') for m in self._text_re.finditer(text))
    return list(dict.fromkeys(u for u in found if self.is_blocked(u)))

  def check_messages(self, messages: Iterable[Any]) -> list[str]:
    """Post-hoc check of a trajectory's tool traffic.

    Args:
      messages: Chat turns with `role`, `content` and `tool_calls` (each
        with `arguments`), e.g. `agent.trajectory.Turn`s.

    Returns:
      Blocked URLs in tool-call arguments and tool observations, in order,
      deduplicated; empty when the trajectory is clean.
    """
    found: dict[str, None] = {}
    for m in messages:
      texts = []
      if getattr(m, 'role', '') == 'tool':
        texts.append(str(getattr(m, 'content', '')))
      for call in getattr(m, 'tool_calls', ()) or ():
        texts.extend(_strings(getattr(call, 'arguments', {})))
      for t in texts:
        found.update(dict.fromkeys(self.find_in_text(t)))
    return list(found)


def _strings(value: Any) -> list[str]:
  """Every string inside nested dicts/lists (tool-call arguments)."""
  if isinstance(value, str):
    return [value]
  if isinstance(value, dict):
    return [s for v in value.values() for s in _strings(v)]
  if isinstance(value, (list, tuple)):
    return [s for v in value for s in _strings(v)]
  return []
