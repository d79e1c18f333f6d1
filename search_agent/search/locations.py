"""Where a search index is, as one string every stage can take.

A tantivy index is a directory (`/runs/r1/index`). An index built on an
Elasticsearch or OpenSearch cluster (`index.build --config.backend=opensearch`)
is named by a location of the form

  elasticsearch://127.0.0.1:9301,127.0.0.1:9302,127.0.0.1:9303/PREFIX
  opensearch+https://node-a:9200,node-b:9200/PREFIX?ca_certs=/etc/ca.pem

scheme = the client flavor (`+https` for TLS), then every node that may
coordinate, then the build's index prefix (`<prefix>-doc`, `<prefix>-passage`
aliases). Query parameters set `es_client.ClusterConfig` fields
(`api_key_env`, `username`, `password_env`, `ca_certs`, `verify_certs`,
`client_retries`, `request_timeout_s`, `connections`); secrets stay in the
environment variables they name.

`index.build --config.backend=opensearch` also writes the location to
`<workdir>/index/cluster_location` (LOCATION_FILE): that directory then
stands for the cluster index. So a stage flag that names an index
(`--index_dir`, `search.index_dir`) takes a tantivy directory, a cluster
build's directory or a location, and `open_engine` opens any of them; the
pipeline's stages keep reading `{index}/index` whatever the backend.
"""

import pathlib
from urllib import parse

from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import LeakageGuard
from search_agent.search.tantivy_backend import tantivy_engine

FLAVORS = es_client.FLAVORS
# In a cluster build's index directory: the location of its indices.
LOCATION_FILE = 'cluster_location'
_FIELDS = {
    'api_key_env': str,
    'username': str,
    'password_env': str,
    'ca_certs': str,
    'verify_certs': lambda v: v.lower() in ('1', 'true', 'yes'),
    'client_retries': int,
    'request_timeout_s': float,
    'connections': int,
}


class LocationError(ValueError):
  """A cluster location that cannot be read."""


def is_cluster(location: str | pathlib.Path) -> bool:
  """True for a cluster location, False for a directory."""
  scheme = str(location).partition('://')[0]
  return '://' in str(location) and scheme.split('+')[0] in FLAVORS


def cluster_location(
    flavor: str, hosts: tuple[str, ...] | str, prefix: str
) -> str:
  """The location of `prefix` on the cluster of `hosts` (node URLs, or one
  comma-separated string of them)."""
  if flavor not in FLAVORS:
    raise LocationError(f'flavor must be one of {FLAVORS}, got {flavor!r}')
  if isinstance(hosts, str):
    hosts = tuple(h.strip() for h in hosts.split(',') if h.strip())
  if not hosts or not prefix or '/' in prefix:
    raise LocationError(
        f'a cluster location needs hosts and a prefix without "/", got'
        f' {hosts!r} and {prefix!r}'
    )
  schemes = {parse.urlsplit(h).scheme or 'http' for h in hosts}
  if len(schemes) != 1 or not schemes <= {'http', 'https'}:
    raise LocationError(f'hosts must all be http:// or https://: {hosts}')
  netlocs = [parse.urlsplit(h).netloc or h for h in hosts]
  tls = '+https' if schemes == {'https'} else ''
  return f'{flavor}{tls}://{",".join(netlocs)}/{prefix}'


def of_config(config: es_backend.EsIndexConfig) -> str:
  """The location of an `EsIndexConfig`'s indices, with the cluster
  settings that differ from the defaults as parameters."""
  cluster = config.cluster
  base = cluster_location(cluster.flavor, cluster.hosts, config.index_prefix)
  default = es_client.ClusterConfig()
  params = {
      k: getattr(cluster, k)
      for k in _FIELDS
      if getattr(cluster, k) != getattr(default, k)
  }
  return base + (f'?{parse.urlencode(params)}' if params else '')


def write(index_dir: str | pathlib.Path, location: str) -> pathlib.Path:
  """Writes `location` to `index_dir`/LOCATION_FILE; returns the path."""
  path = pathlib.Path(index_dir) / LOCATION_FILE
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(location + '\n')
  return path


def resolve(index: str | pathlib.Path) -> str:
  """The cluster location `index` names (itself, or the LOCATION_FILE of
  a cluster build's directory), or '' for a local index directory."""
  if is_cluster(index):
    return str(index)
  path = pathlib.Path(index) / LOCATION_FILE
  if '://' not in str(index) and path.is_file():
    location = path.read_text().strip()
    if not is_cluster(location):
      raise LocationError(f'{path} holds no cluster location: {location!r}')
    return location
  return ''


def es_config(location: str, **index) -> es_backend.EsIndexConfig:
  """The `EsIndexConfig` a cluster location names (`index`: more fields).

  Raises:
    LocationError: for a malformed location or an unknown parameter.
  """
  if not is_cluster(location):
    raise LocationError(f'{location!r} is not a cluster location')
  scheme, _, rest = str(location).partition('://')
  flavor, _, transport = scheme.partition('+')
  if transport not in ('', 'https'):
    raise LocationError(f'{scheme!r}: use {flavor}:// or {flavor}+https://')
  nodes, _, tail = rest.partition('/')
  prefix, _, query = tail.partition('?')
  if not nodes or not prefix:
    raise LocationError(
        f'{location!r}: expected {flavor}://HOST:PORT[,HOST:PORT...]/PREFIX'
    )
  cluster = {}
  for key, values in parse.parse_qs(query, keep_blank_values=True).items():
    if key not in _FIELDS:
      raise LocationError(
          f'{location!r}: unknown parameter {key!r}; known: {list(_FIELDS)}'
      )
    cluster[key] = _FIELDS[key](values[-1])
  http = 'https' if transport else 'http'
  hosts = tuple(f'{http}://{n.strip()}' for n in nodes.split(',') if n.strip())
  return es_backend.EsIndexConfig(
      cluster=es_client.ClusterConfig(flavor=flavor, hosts=hosts, **cluster),
      index_prefix=prefix,
      **index,
  )


def open_engine(
    location: str | pathlib.Path,
    config: EngineConfig = EngineConfig(),
    guard: LeakageGuard | None = None,
) -> SearchEngine:
  """A SearchEngine over the index at `location` (a tantivy directory, a
  cluster build's directory or a cluster location); its query analysis
  matches the index's build. The caller closes it.

  Raises:
    LocationError: for a malformed cluster location.
    BackendError: if the index cannot be opened.
  """
  cluster = resolve(location)
  if not cluster:
    return tantivy_engine(location, config, guard)
  backend = es_backend.EsBackend(es_config(cluster))
  build = backend.build_config
  analyzer = QueryAnalyzer(
      stem=build.stem, remove_stopwords=build.remove_stopwords
  )
  return SearchEngine(
      backend, config, guard, analyzer=analyzer, idf=backend.term_idf
  )
