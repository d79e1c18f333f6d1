"""URL hosts and the site: filter: a host matches a domain and its subdomains.

Hosts are compared in their ASCII (IDNA, UTS #46) form on both sides, the
indexed URL's and the `site:` filter's, so `site:bücher.de` and
`site:xn--bcher-kva.de` reach the same pages whichever spelling the page URL
used.
"""

import urllib.parse

import idna


def ascii_host(host: str) -> str:
  """`host` lowercased, each non-ASCII label in its IDNA (UTS #46) A-label.

  A label IDNA cannot encode is kept as written (the parser then says the
  filter is not a domain name).
  """
  labels = []
  for label in host.lower().split('.'):
    if not label.isascii():
      try:
        label = idna.encode(label, uts46=True).decode('ascii')
      except idna.IDNAError:
        pass
    labels.append(label)
  return '.'.join(labels)


def url_host(url: str) -> str:
  """The host of a URL in ASCII form ('' if none), port and dots dropped."""
  try:
    host = urllib.parse.urlsplit(url.strip()).hostname or ''
  except ValueError:
    return ''
  return ascii_host(host.strip('.'))


def host_suffixes(url: str) -> list[str]:
  """The host and each parent domain: a.b.org → [a.b.org, b.org, org].

  Indexing these as raw terms turns `site:b.org` into one term lookup.
  """
  parts = url_host(url).split('.')
  if parts == ['']:
    return []
  return ['.'.join(parts[i:]) for i in range(len(parts))]


def host_matches(url: str, site: str) -> bool:
  """Whether the URL's host equals `site` or ends with '.' + `site`."""
  host = url_host(url)
  return host == site or host.endswith('.' + site)
