"""One thin call surface over the official Elasticsearch and OpenSearch clients.

The request bodies (`es_bodies.py`) are the same for both; what differs is
how a client is built and which exceptions it raises. `SearchClient.call`
runs one API call and turns every failure into `BackendError` (the cluster
refused the request, or the request is wrong) or `TransientError` (it could
not be reached, timed out, or answered 429/502/503/504: worth retrying).
"""

import dataclasses
import logging
import os
from typing import Any, Callable

import elastic_transport
import elasticsearch
import opensearchpy

from search_agent.search.backend import BackendError

FLAVORS = ('opensearch', 'elasticsearch')
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})

# Both clients log every request at INFO (method, URL, status, duration):
# under absl's INFO default that is a log line per search in index.serve.
# Failures still log at WARNING.
for _name in ('elastic_transport.transport', 'opensearch'):
  logging.getLogger(_name).setLevel(logging.WARNING)


class TransientError(BackendError):
  """A failure that may pass on retry (unreachable, overloaded, timed out)."""


class ShardFailureError(TransientError):
  """A search or read that did not hear from every shard it covers.

  A node was lost with no replica to serve its shards, or shards timed out:
  the answer would be partial (a shorter or different list), so it is an
  error instead. It may pass on retry once a replica is promoted or the node
  rejoins.
  """


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterConfig:
  """Where the cluster is and how to talk to it.

  Secrets never sit in the config: `api_key_env` and `password_env` name
  environment variables that hold them.

  Attributes:
    flavor: 'opensearch' (opensearch-py client) or 'elasticsearch' (the
      official elasticsearch client; it refuses to talk to OpenSearch).
    hosts: Node URLs, e.g. ('http://127.0.0.1:9200',); every node of a
      cluster that may coordinate requests (https:// for TLS).
    request_timeout_s: Per-request timeout.
    client_retries: Retries the client itself makes on connection errors
      and timeouts, each on another node: at least the number of nodes that
      may be down at once.
    connections: HTTP connections kept open per node: the most calls from
      concurrent threads that do not wait for a connection.
    api_key_env: Environment variable holding an API key (Elasticsearch's
      base64 `id:key` encoding), sent as `Authorization: ApiKey ...`;
      '' for none.
    username: Basic-auth user ('' for none); its password is in the
      environment variable `password_env`.
    password_env: Environment variable holding the basic-auth password.
    ca_certs: PEM file of the CA that signed the nodes' certificates (a
      private CA, e.g. Elasticsearch's auto-generated http_ca.crt); '' for
      the system's CAs.
    verify_certs: Check the nodes' TLS certificates (only turn off for a
      throwaway test cluster).
  """

  flavor: str = 'opensearch'
  hosts: tuple[str, ...] = ('http://127.0.0.1:9200',)
  request_timeout_s: float = 30.0
  client_retries: int = 1
  connections: int = 16
  api_key_env: str = ''
  username: str = ''
  password_env: str = ''
  ca_certs: str = ''
  verify_certs: bool = True

  def __post_init__(self):
    if self.flavor not in FLAVORS:
      raise ValueError(f'flavor must be one of {FLAVORS}, got {self.flavor!r}')
    if not self.hosts:
      raise ValueError('hosts is empty; give at least one node URL')
    if isinstance(self.hosts, str):
      raise ValueError(f'hosts must be a tuple of URLs, got {self.hosts!r}')
    if bool(self.username) != bool(self.password_env):
      raise ValueError(
          'basic auth needs both username and password_env, got'
          f' {self.username!r} and {self.password_env!r}'
      )


def _secret(variable: str, what: str) -> str:
  value = os.environ.get(variable, '')
  if not value:
    raise BackendError(
        f'{what}: environment variable {variable} is unset or empty; export'
        ' it or clear the setting'
    )
  return value


def _auth_kwargs(config: ClusterConfig) -> dict[str, Any]:
  """The flavor's client arguments for API key, basic auth and TLS."""
  kwargs: dict[str, Any] = {}
  api_key = config.api_key_env and _secret(config.api_key_env, 'api_key_env')
  basic = config.username and (
      config.username,
      _secret(config.password_env, 'password_env'),
  )
  if config.ca_certs and not os.path.isfile(config.ca_certs):
    raise BackendError(f'ca_certs {config.ca_certs!r} is not a file')
  if config.flavor == 'opensearch':
    if api_key:
      kwargs['headers'] = {'Authorization': f'ApiKey {api_key}'}
    if basic:
      kwargs['http_auth'] = basic
    if any(h.startswith('https://') for h in config.hosts):
      kwargs['use_ssl'] = True
      kwargs['verify_certs'] = config.verify_certs
      if config.ca_certs:
        kwargs['ca_certs'] = config.ca_certs
    return kwargs
  if api_key:
    kwargs['api_key'] = api_key
  if basic:
    kwargs['basic_auth'] = basic
  if any(h.startswith('https://') for h in config.hosts):
    kwargs['verify_certs'] = config.verify_certs
    if config.ca_certs:
      kwargs['ca_certs'] = config.ca_certs
  return kwargs


def _raw_client(config: ClusterConfig):
  if config.flavor == 'opensearch':
    return opensearchpy.OpenSearch(
        hosts=list(config.hosts),
        timeout=config.request_timeout_s,
        max_retries=config.client_retries,
        retry_on_timeout=True,
        http_compress=True,
        pool_maxsize=config.connections,
        **_auth_kwargs(config),
    )
  return elasticsearch.Elasticsearch(
      hosts=list(config.hosts),
      request_timeout=config.request_timeout_s,
      max_retries=config.client_retries,
      retry_on_timeout=True,
      http_compress=True,
      connections_per_node=config.connections,
      **_auth_kwargs(config),
  )


_TLS_ERRORS = (opensearchpy.SSLError, elastic_transport.TlsError)
_NO_ANSWER = (
    opensearchpy.ConnectionError,
    elastic_transport.ConnectionError,
    elastic_transport.ConnectionTimeout,
)
_CLIENT_ERRORS = (
    opensearchpy.OpenSearchException,
    elasticsearch.ApiError,
    elasticsearch.UnsupportedProductError,
    elastic_transport.TransportError,
)


def _classify(e: Exception) -> tuple[int | None, str]:
  """(HTTP status, or None if no answer came; short description)."""
  if isinstance(e, _NO_ANSWER):
    return None, f'{type(e).__name__}: {e}'
  if isinstance(e, opensearchpy.TransportError):
    status = e.status_code if isinstance(e.status_code, int) else 0
    return status, f'{e.error}: {str(e.info)[:300]}'
  if isinstance(e, elasticsearch.UnsupportedProductError):
    return 0, 'the server is not Elasticsearch (use flavor=opensearch)'
  if isinstance(e, elasticsearch.ApiError):
    return e.meta.status, f'{e.message}: {str(e.body)[:300]}'
  return 0, f'{type(e).__name__}: {e}'


class SearchClient:
  """An Elasticsearch or OpenSearch client whose calls raise BackendError."""

  def __init__(self, config: ClusterConfig):
    self.config = config
    self.raw = _raw_client(config)

  def call(self, what: str, fn: Callable[..., Any], **kwargs) -> Any:
    """Runs `fn(**kwargs)`; `what` names the call in error messages.

    Raises:
      TransientError: no answer, or a 429/502/503/504 answer.
      BackendError: any other error answer.
    """
    try:
      return fn(**kwargs)
    except _TLS_ERRORS as e:
      raise BackendError(
          f'{what}: TLS with the cluster at {", ".join(self.config.hosts)}'
          f' failed ({type(e).__name__}: {str(e)[:300]}); if its'
          ' certificates come from a private CA, set cluster.ca_certs to'
          " that CA's PEM file"
      ) from e
    except _CLIENT_ERRORS as e:
      status, detail = _classify(e)
      where = ', '.join(self.config.hosts)
      if status is None:
        raise TransientError(
            f'{what}: cannot reach the {self.config.flavor} cluster at'
            f' {where} ({detail}); start it (tests: `bash'
            ' launch/opensearch.sh start`) or fix `hosts`'
        ) from e
      if status in TRANSIENT_STATUSES:
        raise TransientError(
            f'{what}: the cluster at {where} answered {status} ({detail})'
        ) from e
      answer = f'status {status}' if status else 'an unusable answer'
      raise BackendError(
          f'{what}: the cluster at {where} refused the request with'
          f' {answer} ({detail})'
      ) from e

  def check_cluster(self) -> dict[str, Any]:
    """The cluster's `GET /` answer; fails clearly if it is not reachable,
    or is not the product this flavor's client talks to."""
    return self.call('info', self.raw.info)

  def close(self) -> None:
    self.raw.close()
