"""Wikitext → plain text and link targets (no full parser; dumps only).

Removes comments, `<ref>`s and other non-prose tags, templates `{{...}}`,
tables `{|...|}`, files/images, categories and interlanguage links; turns
`[[target|label]]` into `label`, `[http://x label]` into `label`, drops
bold/italic quotes, heading `=`s and list markers. Nested constructs are
removed innermost first.
"""

import re

_COMMENT_RE = re.compile(r'<!--.*?-->', re.S)
_DROP_TAGS = 'ref|math|gallery|timeline|score|syntaxhighlight|source|imagemap'
_PAIRED_TAG_RE = re.compile(
    rf'<({_DROP_TAGS})\b[^>]*?(?<!/)>.*?</\1\s*>', re.S | re.I
)
_SELF_CLOSING_RE = re.compile(rf'<({_DROP_TAGS})\b[^>]*/>', re.I)
_ANY_TAG_RE = re.compile(r'</?[a-zA-Z][^>]*>')
_TEMPLATE_RE = re.compile(r'\{\{[^{}]*\}\}')
_TABLE_RE = re.compile(r'\{\|(?:(?!\{\|).)*?\|\}', re.S)
_LINK_RE = re.compile(r'\[\[([^\[\]]*)\]\]')
_EXT_LINK_RE = re.compile(r'\[(?:https?:)?//[^\s\]]*\s*([^\]]*)\]')
_QUOTES_RE = re.compile(r"'{2,}")
_HEADING_RE = re.compile(r'^[ \t]*(=+)[ \t]*(.*?)[ \t]*\1[ \t]*$', re.M)
_LIST_RE = re.compile(r'^[*#:;]+[ \t]*', re.M)
_MAGIC_RE = re.compile(r'__[A-Z]+__')
_NON_ARTICLE = {
    'file', 'image', 'media', 'category', 'template', 'wikipedia', 'wp',
    'help', 'portal', 'user', 'talk', 'special', 'draft', 'module', 'book',
    'wiktionary', 'wikt', 'commons', 'mediawiki', 'timedtext',
}  # fmt: skip
_INTERWIKI_RE = re.compile(r'^[a-z]{2,3}(-[a-z]+)?$')


def _namespace(target: str) -> str | None:
  head, sep, _ = target.partition(':')
  return head.strip().lower() if sep else None


def normalize_target(target: str) -> str | None:
  """`[[foo bar#Section|x]]` target → `Foo_bar`; None if not an article."""
  target = target.split('|', 1)[0].split('#', 1)[0].strip()
  target = target.lstrip(':').strip()
  ns = _namespace(target)
  if ns is not None and (ns in _NON_ARTICLE or _INTERWIKI_RE.match(ns)):
    return None
  if not target:
    return None
  slug = '_'.join(target.replace('_', ' ').split())
  return slug[:1].upper() + slug[1:]


def raw_link_targets(wikitext: str) -> list[str]:
  """Every `[[...]]` target in order (all namespaces), nesting included."""
  return [
      m.split('|', 1)[0].strip()
      for m in re.findall(r'\[\[([^\[\]|]*)', _COMMENT_RE.sub('', wikitext))
  ]


def article_links(wikitext: str) -> list[str]:
  """Article link targets (normalized, deduplicated, in order)."""
  out = {}
  for target in raw_link_targets(wikitext):
    norm = normalize_target(target)
    if norm:
      out[norm] = None
  return list(out)


def _replace_link(m: re.Match) -> str:
  inner = m.group(1)
  target, _, label = inner.partition('|')
  ns = _namespace(target.lstrip(':'))
  if ns is not None and (ns in _NON_ARTICLE or _INTERWIKI_RE.match(ns)):
    return '' if not target.startswith(':') else (label or target)
  return (label or target).strip()


def _sub_until_stable(pattern: re.Pattern, repl, text: str) -> str:
  while True:
    new = pattern.sub(repl, text)
    if new == text:
      return text
    text = new


def clean_wikitext(wikitext: str) -> str:
  """Plain prose text of a page's wikitext."""
  text = _COMMENT_RE.sub('', wikitext)
  text = _PAIRED_TAG_RE.sub('', text)
  text = _SELF_CLOSING_RE.sub('', text)
  text = _sub_until_stable(_TEMPLATE_RE, '', text)
  text = _sub_until_stable(_TABLE_RE, '', text)
  text = _sub_until_stable(_LINK_RE, _replace_link, text)
  text = _EXT_LINK_RE.sub(lambda m: m.group(1), text)
  text = _ANY_TAG_RE.sub('', text)
  text = _QUOTES_RE.sub('', text)
  text = _HEADING_RE.sub(lambda m: m.group(2), text)
  text = _LIST_RE.sub('', text)
  text = _MAGIC_RE.sub('', text)
  lines = [' '.join(line.split()) for line in text.split('\n')]
  return re.sub(r'\n{3,}', '\n\n', '\n'.join(lines)).strip()
