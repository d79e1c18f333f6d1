"""Tests for the async search clients: in process and over HTTP."""

import asyncio

import httpx
import pytest

from search_agent.chat.turns import ToolCall
from search_agent.search import client
from search_agent.search import service
from search_agent.search import tools


def _http(engine, limits=service.ServiceLimits()):
  app = service.create_app(engine, limits)
  return client.HttpSearch(
      'http://test', transport=httpx.ASGITransport(app=app)
  )


def test_http_and_local_clients_agree(wiki_engine):
  queries = ['Lothair II', 'x site:a.org site:b.org', '"Bishop of Elmham"']

  async def both():
    local, http = client.LocalSearch(wiki_engine), _http(wiki_engine)
    try:
      return (
          await local.search(queries, 5),
          await http.search(queries, 5),
          await local.get_documents(['Teutberga', 'nope']),
          await http.get_documents(['Teutberga', 'nope']),
      )
    finally:
      await http.aclose()

  local, remote, local_docs, remote_docs = asyncio.run(both())
  assert local == remote
  assert local[0].hits[0].doc_id == 'Lothair_II' and local[0].error is None
  assert 'site:' in local[1].error and local[1].hits == ()
  assert [h.doc_id for h in local[2].hits] == ['Theodred_II_(Bishop_of_Elmham)']
  assert local_docs == remote_docs
  assert local_docs[0].title == 'Teutberga' and local_docs[1] is None


def test_toolbox_gives_the_same_observations_over_http(wiki_engine):
  calls = [
      ToolCall(name='search', arguments={'query': ['Lothair II', 'Waldrada']}),
      ToolCall(
          name='visit', arguments={'ref_id': ['r2', 'r1'], 'goal': 'wife'}
      ),
  ]

  async def observations(search):
    box = tools.Toolbox(search)
    return [(await box.execute(c)) for c in calls]

  async def remote():
    http = _http(wiki_engine)
    try:
      return await observations(http)
    finally:
      await http.aclose()

  assert asyncio.run(observations(wiki_engine)) == asyncio.run(remote())


def test_agent_text_that_is_not_unicode_is_an_error_observation(wiki_engine):
  # A model's JSON tool call can carry "\ud800"; over HTTP the service
  # refuses it (400), which the toolbox raised as a service failure.
  calls = [
      ToolCall(name='search', arguments={'query': ['Lothair \ud800']}),
      ToolCall(name='visit', arguments={'ref_id': ['r1'], 'goal': '\udfff'}),
  ]

  async def run():
    http = _http(wiki_engine)
    try:
      box = tools.Toolbox(http)
      return [await box.execute(c) for c in calls]
    finally:
      await http.aclose()

  for result in asyncio.run(run()):
    assert 'unpaired UTF-16 surrogate' in result.error, result.text


def test_service_failures_raise_search_service_error(wiki_engine):
  async def over_limit():
    http = _http(wiki_engine, service.ServiceLimits(max_queries=1))
    try:
      await http.search(['a', 'b'], 3)
    finally:
      await http.aclose()

  with pytest.raises(client.SearchServiceError, match='413'):
    asyncio.run(over_limit())

  async def unreachable():
    http = client.HttpSearch('http://127.0.0.1:9', timeout_s=2, retries=0)
    try:
      await http.get_documents(['x'])
    finally:
      await http.aclose()

  with pytest.raises(client.SearchServiceError, match='unreachable'):
    asyncio.run(unreachable())
  with pytest.raises(TypeError, match='SearchEngine or a search service'):
    client.as_service(object())


class _Flaky(httpx.AsyncBaseTransport):
  """The real app behind a transport whose first `failures` answers are 503."""

  def __init__(self, app, failures: int):
    self._app = httpx.ASGITransport(app=app)
    self.failures = failures
    self.requests = 0

  async def handle_async_request(self, request):
    self.requests += 1
    if self.requests <= self.failures:
      return httpx.Response(503, json={'error': 'restarting'})
    return await self._app.handle_async_request(request)


def test_transient_failures_are_retried_with_backoff(wiki_engine):
  app = service.create_app(wiki_engine, service.ServiceLimits())

  def search(failures):
    transport = _Flaky(app, failures)

    async def go():
      http = client.HttpSearch(
          'http://test', retries=2, backoff_s=0.01, transport=transport
      )
      try:
        return await http.search(['Teutberga'], 1)
      finally:
        await http.aclose()

    return asyncio.run(go()), transport.requests

  (result,), requests = search(2)
  assert result.hits[0].doc_id == 'Teutberga' and requests == 3
  with pytest.raises(client.SearchServiceError, match='503'):
    search(3)
