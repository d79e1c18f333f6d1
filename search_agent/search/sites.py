"""URL hosts and the site: filter: a host matches a domain and its subdomains."""

import urllib.parse


def url_host(url: str) -> str:
  """The lowercased host of a URL ('' if it has none), port and dots dropped."""
  try:
    host = urllib.parse.urlsplit(url.strip()).hostname or ''
  except ValueError:
    return ''
  return host.strip('.').lower()


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
