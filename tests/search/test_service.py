"""Tests for the HTTP search service over a real tantivy index (httpx)."""

import asyncio
import json
import threading
import time
import uuid

import httpx
import hypothesis
from hypothesis import strategies as st
import pytest

from search_agent.corpus.twowiki import read_2wiki
from search_agent.search import es_backend
from search_agent.search import service
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.es_backend import build_es_index
from tpu_configs.search import serve as serve_config

BUILD = IndexBuildConfig()
LIMITS = service.ServiceLimits(
    max_body_bytes=4096, max_queries=4, max_k=20, max_doc_ids=3
)


def _requests(app, *requests):
  """Sends (method, path, body) requests concurrently; returns responses."""

  async def go():
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url='http://test'
    ) as http:
      return await asyncio.gather(*(
          http.request(m, p, content=b if isinstance(b, bytes) else None,
                       json=None if isinstance(b, bytes) else b)
          for m, p, b in requests
      ))  # fmt: skip

  return asyncio.run(go())


def test_search_and_documents_answer_like_the_engine(wiki_engine):
  app = service.create_app(wiki_engine, LIMITS)
  health, found, docs = _requests(
      app,
      ('GET', '/health', None),
      ('POST', '/search', {'queries': ['Lothair II', 'x "y'], 'k': 3}),
      ('POST', '/documents', {'doc_ids': ['Teutberga', 'no_such_doc']}),
  )
  assert health.json() == {'status': 'ok', 'num_documents': 6119}
  assert found.status_code == 200
  ok, bad = found.json()['results']
  expected = wiki_engine.search(['Lothair II'], 3)[0]
  assert [h['doc_id'] for h in ok['hits']] == [h.doc_id for h in expected]
  assert ok['hits'][0]['snippet'] == expected[0].snippet
  assert ok['error'] is None
  assert bad['hits'] == [] and 'unbalanced' in bad['error']
  teutberga, missing = docs.json()['documents']
  assert teutberga['title'] == 'Teutberga' and missing is None


@pytest.mark.parametrize(
    'path,body,status,message',
    [
        ('/search', b'{not json', 400, 'not valid JSON'),
        ('/search', b'\xff\xfe', 400, 'not valid JSON'),
        ('/search', [1, 2], 400, 'JSON object'),
        ('/search', {'queries': 'q'}, 400, 'list of strings'),
        ('/search', {'queries': [None]}, 400, 'list of strings'),
        ('/search', {'queries': []}, 400, 'must not be empty'),
        ('/search', {'queries': ['q'], 'k': 0}, 400, 'integer >= 1'),
        ('/search', {'queries': ['q'], 'k': 'ten'}, 400, 'integer >= 1'),
        ('/search', {'queries': ['q'], 'k': 21}, 413, 'over the limit'),
        ('/search', {'queries': ['q'] * 5}, 413, 'over the limit of 4'),
        ('/search', {'queries': ['q'], 'extra': 1}, 400, 'unknown fields'),
        ('/search', {'queries': ['q' * 5000]}, 413, 'body over the limit'),
        ('/documents', {'doc_ids': ['a'] * 4}, 413, 'over the limit of 3'),
        ('/documents', {}, 400, 'list of strings'),
        # Deep nesting used to reach json.loads' recursion limit (a 500).
        ('/search', b'[' * 1492 + b']' * 1492, 400, 'nests 1492 deep'),
        ('/search', b'{"a":' * 600 + b'1' + b'}' * 600, 400, 'nests 600 deep'),
        ('/documents', b'[' * 4000, 400, 'nests 4000 deep'),
        ('/search', {'queries': ['[' * 100], 'k': 3}, 200, None),
    ],
)
def test_bad_input_is_a_4xx_with_a_message(
    wiki_engine, path, body, status, message
):
  app = service.create_app(wiki_engine, LIMITS)
  (resp,) = _requests(app, ('POST', path, body))
  assert resp.status_code == status
  if message:
    assert message in resp.json()['error']


@pytest.mark.parametrize(
    'body, echoed',
    [
        ({'queries': ['q'], 'k': 10**3000}, '"k" is 1000000'),
        ({'queries': ['q'], 'k': 'x' * 3000}, "got 'xxxx"),
        ({'queries': ['q'], 'y' * 3000: 1}, "unknown fields ['yyyy"),
    ],
)
def test_error_messages_echo_a_clipped_value(wiki_engine, body, echoed):
  # A k of 3,001 digits used to come back whole in the message.
  app = service.create_app(wiki_engine, LIMITS)
  (resp,) = _requests(app, ('POST', '/search', body))
  assert resp.status_code in (400, 413)
  error = resp.json()['error']
  assert echoed in error and '…' in error and len(error) < 200, error


def test_a_client_gone_mid_body_is_one_log_line(wiki_engine, caplog):
  app = service.create_app(wiki_engine, LIMITS)
  messages = iter(
      [
          {'type': 'http.request', 'body': b'{"queries": [', 'more_body': True},
          {'type': 'http.disconnect'},
      ]
  )
  sent = []

  async def receive():
    return next(messages)

  async def send(message):
    sent.append(message)

  scope = {
      'type': 'http', 'asgi': {'version': '3.0'}, 'http_version': '1.1',
      'method': 'POST', 'scheme': 'http', 'path': '/search',
      'raw_path': b'/search', 'query_string': b'', 'root_path': '',
      'headers': [(b'content-type', b'application/json')],
      'client': ('127.0.0.1', 1), 'server': ('test', 80),
  }  # fmt: skip
  with caplog.at_level('WARNING'):
    asyncio.run(app(scope, receive, send))  # used to raise ClientDisconnect
  (record,) = [r for r in caplog.records if 'disconnected' in r.getMessage()]
  assert record.getMessage() == (
      'client disconnected after 13 body bytes of POST /search'
  )
  assert record.exc_info is None
  assert sent[0]['status'] == 400


@pytest.mark.parametrize(
    'path, body',
    [
        ('/search', b'{"queries": ["Lothair \\ud800"], "k": 3}'),
        ('/search', b'{"queries": ["ok", "site:\\udfff.org x"], "k": 3}'),
        ('/documents', b'{"doc_ids": ["\\ud800"]}'),
    ],
)
def test_unpaired_surrogates_are_400_not_500(wiki_engine, path, body):
  # Valid JSON, but not Unicode text: echoing the query back (or looking
  # the doc_id up in tantivy) used to fail with a 500.
  app = service.create_app(wiki_engine, LIMITS)
  (resp,) = _requests(app, ('POST', path, body))
  assert resp.status_code == 400, resp.text
  assert 'unpaired UTF-16 surrogate' in resp.json()['error']


def test_unknown_routes_and_methods_are_4xx(wiki_engine):
  app = service.create_app(wiki_engine, LIMITS)
  missing, wrong = _requests(
      app, ('GET', '/nope', None), ('GET', '/search', None)
  )
  assert missing.status_code == 404 and wrong.status_code == 405


class _Probe:
  """The real engine, slowed down, counting searches in flight."""

  def __init__(self, engine, delay_s):
    self._engine, self._delay_s = engine, delay_s
    self.config = engine.config
    self.in_flight = self.peak = 0
    self._lock = threading.Lock()

  def search_or_errors(self, queries, k):
    with self._lock:
      self.in_flight += 1
      self.peak = max(self.peak, self.in_flight)
    time.sleep(self._delay_s)
    try:
      return self._engine.search_or_errors(queries, k)
    finally:
      with self._lock:
        self.in_flight -= 1


def test_batches_are_answered_concurrently(wiki_engine):
  probe = _Probe(wiki_engine, delay_s=0.2)
  app = service.create_app(probe, service.ServiceLimits(threads=8))
  body = {'queries': ['Lothair II'], 'k': 2}
  start = time.perf_counter()
  responses = _requests(app, *[('POST', '/search', body)] * 8)
  elapsed = time.perf_counter() - start
  assert all(r.status_code == 200 for r in responses)
  assert probe.peak >= 4
  assert elapsed < 8 * 0.2 * 0.75  # one by one would take >= 1.6 s
  assert json.dumps(responses[0].json())


def test_service_over_a_cluster_answers_like_tantivy(cluster, wiki_engine):
  c = serve_config.get_config()
  c.backend = 'opensearch'
  c.opensearch.cluster.flavor = cluster.flavor
  c.opensearch.cluster.hosts = (cluster.url,)
  c.opensearch.index.prefix = f'test-serve-{uuid.uuid4().hex[:8]}'
  docs = read_2wiki()[:300]
  build_es_index(es_backend.es_index_config(c.opensearch), docs, BUILD)
  try:
    es_engine = service.open_engine(c, workdir='')
    try:
      app = service.create_app(es_engine, LIMITS)
      health, found = _requests(
          app,
          ('GET', '/health', None),
          ('POST', '/search', {'queries': ['Lothair II', 'x "y'], 'k': 3}),
      )
    finally:
      es_engine.close()
  finally:
    cluster.delete_indices(c.opensearch.index.prefix)
  assert health.json()['num_documents'] == 300
  ok, bad = found.json()['results']
  assert (
      ok['hits'][0]['doc_id']
      == wiki_engine.search(['Lothair II'], 1)[0][0].doc_id
  )
  assert 'Teutberga' in ok['hits'][0]['snippet']
  assert 'unbalanced' in bad['error']


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# st.text() never draws surrogates; JSON can carry them ("\ud800").
_TEXT = st.text(max_size=40) | st.text(
    st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=6
)
_BODIES = st.one_of(
    _JSON,
    st.fixed_dictionaries(
        {'queries': st.lists(_TEXT, max_size=5)},
        optional={'k': st.integers(-5, 200) | _JSON},
    ),
    st.fixed_dictionaries({'doc_ids': st.lists(_TEXT)}),
    st.binary(max_size=64),
)
# Nested arrays/objects, some deeper than the limit (32 in LIMITS).
_NESTED = st.builds(
    lambda depth, opener, inner: (
        opener * depth + inner + {b'[': b']', b'{"a":': b'}'}[opener] * depth
    ),
    st.integers(0, 2000),
    st.sampled_from([b'[', b'{"a":']),
    st.sampled_from([b'1', b'"]]]"', b'"\\"']),
)


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    path=st.sampled_from(['/search', '/documents']), body=_BODIES | _NESTED
)
def test_no_input_causes_a_5xx(wiki_engine, path, body):
  app = service.create_app(wiki_engine, LIMITS)
  if not isinstance(body, bytes):
    body = json.dumps(body).encode()
  (resp,) = _requests(app, ('POST', path, body))
  assert resp.status_code in (200, 400, 413), resp.text
  if resp.status_code != 200:
    assert resp.json()['error']
