"""ClusterConfig's API key, basic auth and CA certificate reach the wire.

A small HTTP(S) server that answers `GET /` like Elasticsearch records the
`Authorization` header each flavor's client sends; over TLS its certificate
is signed by a throwaway CA (openssl), which the client trusts only through
`ca_certs`.
"""

import base64
import contextlib
import http.server
import json
import shutil
import ssl
import subprocess
import threading

import pytest

from search_agent.search import es_client
from search_agent.search.backend import BackendError


class _Handler(http.server.BaseHTTPRequestHandler):
  seen: list[str | None] = []

  def do_GET(self):  # pylint: disable=invalid-name
    type(self).seen.append(self.headers.get('Authorization'))
    body = json.dumps(
        {
            'name': 'fake',
            'cluster_name': 'fake',
            'version': {'number': '9.2.0', 'distribution': 'elasticsearch'},
            'tagline': 'You Know, for Search',
        }
    ).encode()
    self.send_response(200)
    self.send_header('Content-Type', 'application/json')
    self.send_header('X-Elastic-Product', 'Elasticsearch')
    self.send_header('Content-Length', str(len(body)))
    self.end_headers()
    self.wfile.write(body)

  def log_message(self, *args):
    pass


@contextlib.contextmanager
def _serve(context: ssl.SSLContext | None = None):
  """Yields (url, the Authorization headers seen); TLS with `context`."""
  _Handler.seen = []
  httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
  scheme = 'http'
  if context is not None:
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    scheme = 'https'
  thread = threading.Thread(target=httpd.serve_forever, daemon=True)
  thread.start()
  try:
    yield f'{scheme}://127.0.0.1:{httpd.server_address[1]}', _Handler.seen
  finally:
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server():
  with _serve() as served:
    yield served


@pytest.mark.parametrize('flavor', es_client.FLAVORS)
def test_api_key_is_sent_from_its_environment_variable(
    server, flavor, monkeypatch
):
  url, seen = server
  monkeypatch.setenv('TEST_ES_API_KEY', 'a2V5aWQ6c2VjcmV0')
  client = es_client.SearchClient(
      es_client.ClusterConfig(
          flavor=flavor, hosts=(url,), api_key_env='TEST_ES_API_KEY'
      )
  )
  try:
    if flavor == 'elasticsearch':
      client.check_cluster()
    else:
      client.call('info', client.raw.info)
  finally:
    client.close()
  assert seen == ['ApiKey a2V5aWQ6c2VjcmV0']


@pytest.mark.parametrize('flavor', es_client.FLAVORS)
def test_basic_auth_is_sent(server, flavor, monkeypatch):
  url, seen = server
  monkeypatch.setenv('TEST_ES_PASSWORD', 'pa:ss')
  client = es_client.SearchClient(
      es_client.ClusterConfig(
          flavor=flavor,
          hosts=(url,),
          username='elastic',
          password_env='TEST_ES_PASSWORD',
      )
  )
  try:
    client.call('info', client.raw.info)
  finally:
    client.close()
  assert seen == ['Basic ' + base64.b64encode(b'elastic:pa:ss').decode()]


def test_missing_secrets_and_ca_file_are_clear_errors(monkeypatch):
  monkeypatch.delenv('TEST_ES_NOPE', raising=False)
  with pytest.raises(BackendError, match='TEST_ES_NOPE is unset'):
    es_client.SearchClient(es_client.ClusterConfig(api_key_env='TEST_ES_NOPE'))
  with pytest.raises(ValueError, match='username and password_env'):
    es_client.ClusterConfig(username='elastic')
  with pytest.raises(BackendError, match='is not a file'):
    es_client.SearchClient(
        es_client.ClusterConfig(
            hosts=('https://127.0.0.1:1',), ca_certs='/no/such/ca.pem'
        )
    )


def _tls(tmp_path_factory):
  """(server SSLContext, CA PEM path): a CA and a cert for 127.0.0.1."""
  if not shutil.which('openssl'):
    pytest.skip('openssl is not installed')
  d = tmp_path_factory.mktemp('tls')

  def run(*args):
    subprocess.run(['openssl', *args], cwd=d, check=True, capture_output=True)

  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
      '-subj', '/CN=test CA', '-keyout', 'ca.key', '-out', 'ca.pem')  # fmt: skip
  run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1',
      '-keyout', 'node.key', '-out', 'node.csr')  # fmt: skip
  (d / 'ext.cnf').write_text('subjectAltName=IP:127.0.0.1\n')
  run('x509', '-req', '-in', 'node.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
      '-CAcreateserial', '-days', '1', '-extfile', 'ext.cnf',
      '-out', 'node.pem')  # fmt: skip
  context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
  context.load_cert_chain(d / 'node.pem', d / 'node.key')
  return context, str(d / 'ca.pem')


@pytest.fixture(scope='module')
def tls(tmp_path_factory):
  return _tls(tmp_path_factory)


@pytest.mark.parametrize('flavor', es_client.FLAVORS)
def test_ca_certs_let_the_client_trust_a_private_ca(flavor, tls):
  context, ca = tls
  with _serve(context) as (url, seen):
    trusted = es_client.SearchClient(
        es_client.ClusterConfig(
            flavor=flavor, hosts=(url,), ca_certs=ca, client_retries=0
        )
    )
    trusted.call('info', trusted.raw.info)
    trusted.close()
    assert len(seen) == 1
    untrusted = es_client.SearchClient(
        es_client.ClusterConfig(
            flavor=flavor, hosts=(url,), client_retries=0, request_timeout_s=5
        )
    )
    with pytest.raises(BackendError, match='TLS .* failed.*ca_certs'):
      untrusted.call('info', untrusted.raw.info)
    untrusted.close()
