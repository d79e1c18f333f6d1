"""Tests for the agent toolbox over a real tantivy index of the 2Wiki corpus."""

import asyncio
import json
import re
import time

import httpx
import hypothesis
from hypothesis import strategies as st
import pytest

from search_agent.agent import react
from search_agent.chat.turns import ToolCall
from search_agent.llm.scripted import ScriptedLLM
from search_agent.search import client as client_lib
from search_agent.search import es_client
from search_agent.search import reranker
from search_agent.search import service
from search_agent.search import tools
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import GuardConfig
from search_agent.search.guard import LeakageGuard
from search_agent.search.pages import PageConfig

ALL = ('search', 'visit', 'open', 'find')


def _run(toolbox, name, **arguments):
  return asyncio.run(toolbox.execute(ToolCall(name=name, arguments=arguments)))


def test_search_gives_ranked_results_with_stable_ref_ids(wiki_engine):
  box = tools.Toolbox(wiki_engine, config=tools.ToolboxConfig(top_k=3))
  first = _run(box, 'search', query=['wife of Lothair II', 'Teutberga'])
  assert first.error is None
  q1, q2 = first.data['queries']
  assert [r['ref_id'] for r in q1['results']] == ['r1', 'r2', 'r3']
  assert q1['results'][0]['title'] == 'Lothair II'
  assert 'Teutberga' in q1['results'][0]['snippet']
  by_url = {r['url']: r['ref_id'] for r in q1['results']}
  seen_again = [r for r in q2['results'] if r['url'] in by_url]
  assert seen_again  # Lothair II answers both queries
  for r in seen_again:  # a document seen before keeps its ref_id
    assert by_url[r['url']] == r['ref_id']
  assert '[r1] Lothair II\nURL: https://en.wikipedia.org/wiki/Lothair_II' in (
      first.text
  )
  assert set(first.urls) == {r['url'] for q in (q1, q2) for r in q['results']}
  json.dumps(first.data)  # structured results are plain JSON
  again = _run(box, 'search', query='Lothair II')
  assert again.data['queries'][0]['results'][0]['ref_id'] == 'r1'


def test_malformed_queries_are_error_observations(wiki_engine):
  box = tools.Toolbox(wiki_engine)
  mixed = _run(box, 'search', query=['Teutberga', 'site:a.org site:b.org x'])
  assert mixed.error is None  # one query answered
  assert mixed.data['queries'][1]['error'].count('site:') >= 1
  assert 'Error: query' in mixed.text
  bad = _run(box, 'search', query=['"unbalanced'])
  assert 'unbalanced double quote' in bad.error
  for name, args, msg in [
      ('browse', {'url': 'x'}, 'unknown tool'),
      ('open', {'ref_id': 'r1'}, 'unknown tool'),  # not offered by default
      ('search', {'q': ['x']}, 'missing'),
      ('visit', {'ref_id': ['r1']}, 'missing'),
  ]:
    result = _run(box, name, **args)
    assert msg in result.error and result.text.startswith('Error:')


def test_visit_extracts_evidence_without_a_summarizer(wiki_engine):
  box = tools.Toolbox(wiki_engine, config=tools.ToolboxConfig(top_k=2))
  _run(box, 'search', query=['Lothair II'])
  result = _run(box, 'visit', ref_id=['r1', 'r7'], goal='whom did he marry')
  assert result.error is None
  ok, missing = result.data['documents']
  assert ok['method'] == 'extractive' and 'Teutberga' in ok['evidence']
  assert 'unknown ref_id' in missing['error']
  assert 'extractive, BM25' in result.text and '[r7] Error:' in result.text
  assert result.urls == ('https://en.wikipedia.org/wiki/Lothair_II',)
  only_bad = _run(box, 'visit', ref_id='r9', goal='x')
  assert 'unknown ref_id' in only_bad.error


def test_visit_reads_pages_concurrently_with_a_summarizer(wiki_engine):
  def reply(messages):
    title = re.search(r'Page title: (.*)', messages[0]['content']).group(1)
    return f'<evidence>from {title}</evidence><summary>about {title}</summary>'

  llm = ScriptedLLM(reply, delay_s=0.3)
  box = tools.Toolbox(wiki_engine, summarizer=llm)
  found = _run(box, 'search', query=['Lothair II'])
  refs = [r['ref_id'] for r in found.data['queries'][0]['results'][:4]]
  start = time.perf_counter()
  result = _run(box, 'visit', ref_id=refs, goal='family')
  assert time.perf_counter() - start < 0.3 * 4 * 0.75  # not one by one
  assert len(llm.calls) == 4
  for doc in result.data['documents']:
    assert doc['method'] == 'llm'
    assert doc['summary'].startswith('about ')
  assert 'Summary:\nabout Lothair II' in result.text


def test_open_pages_and_find_within_opened_documents(wiki_engine):
  config = tools.ToolboxConfig(tools=ALL, pages=PageConfig(page_lines=2))
  box = tools.Toolbox(wiki_engine, config=config)
  _run(box, 'search', query=['Lothair II'])
  early = _run(box, 'find', ref_id='r1', pattern='Teutberga')
  assert 'call open(ref_id="r1") first' in early.error
  page0 = _run(box, 'open', ref_id='r1')
  assert page0.error is None and page0.data['reopened'] is False
  assert page0.data['num_pages'] == 2
  assert 'open(ref_id="r1", cursor=1)' in page0.text
  page1 = _run(box, 'open', ref_id='r1', cursor=1)
  assert page1.data['reopened'] is True and 'L2: the Elder.' in page1.text
  past = _run(box, 'open', ref_id='r1', cursor=2)
  assert 'past the end' in past.error
  found = _run(box, 'find', ref_id='r1', pattern='teutberga')
  assert found.data['matches'][0]['line'] == 1
  assert 'L1 (page 0):' in found.text
  assert _run(box, 'open', ref_id='r99').error.startswith('unknown ref_id')


def test_guard_blocks_visit_and_open_of_a_blocked_url(wiki_engine):
  guard = LeakageGuard(GuardConfig(blocked_patterns=('en.wikipedia.org/wiki',)))
  box = tools.Toolbox(
      wiki_engine, config=tools.ToolboxConfig(tools=ALL), guard=guard
  )
  found = _run(box, 'search', query=['Lothair II'])
  assert found.data['queries'][0]['results'] == []  # all on en.wikipedia.org
  assert found.data['queries'][0]['blocked'] == 10
  box.ref_for('Lothair_II', 'Lothair II', 'https://en.wikipedia.org/wiki/L')
  visited = _run(box, 'visit', ref_id=['r1'], goal='wife')
  assert 'blocked' in visited.error and visited.urls == ()
  assert 'blocked' in _run(box, 'open', ref_id='r1').error


def test_calls_naming_a_blocked_url_are_refused(wiki_engine):
  box = tools.Toolbox(wiki_engine)
  result = _run(
      box, 'search', query=['answers huggingface.co/datasets/x/bc', 'ok']
  )
  assert 'blocked URLs' in result.error and result.urls == ()
  assert result.data['blocked_urls'] == ['huggingface.co/datasets/x/bc']
  assert _run(box, 'search', query=['hugging face datasets']).error is None


def test_reranker_reorders_results_and_is_recorded(wiki_engine):
  llm = ScriptedLLM(['2, 1'])
  config = tools.ToolboxConfig(
      top_k=2, rerank=reranker.RerankConfig(enabled=True, max_candidates=3)
  )
  box = tools.Toolbox(
      wiki_engine, config=config, reranker_llm=llm, context='Who was Waldrada?'
  )
  plain = wiki_engine.search(['Lothair II'], 3)[0]
  result = _run(box, 'search', query=['Lothair II'])
  (q,) = result.data['queries']
  assert [r['url'] for r in q['results']] == [plain[1].url, plain[0].url]
  assert q['rerank']['order'] == [1, 0, 2]
  assert 'Who was Waldrada?' in llm.calls[0][0]['content']
  with pytest.raises(ValueError, match='reranker_llm'):
    tools.Toolbox(wiki_engine, config=config)
  manifest = box.manifest()
  assert [s['function']['name'] for s in manifest['schemas']] == [
      'search', 'visit'
  ]  # fmt: skip
  assert manifest['models'] == {'reranker': 'scripted'}
  assert len(manifest['prompts']['rerank.txt']) == 64
  assert manifest['config']['rerank']['enabled'] is True
  json.dumps(manifest)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_ARGS = st.one_of(
    _JSON,
    st.fixed_dictionaries({}, optional={
        'query': st.lists(st.text(max_size=30), max_size=3) | _JSON,
        'ref_id': st.sampled_from(['r1', 'r2', 'r0', '', 'R1']) | _JSON,
        'goal': st.text(max_size=30),
        'cursor': st.integers(-2, 5) | _JSON,
        'pattern': st.text(max_size=10),
    }),
)  # fmt: skip


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(name=st.sampled_from(ALL + ('browse', '')), arguments=_ARGS)
def test_any_call_gives_an_observation_never_an_exception(
    wiki_engine, name, arguments
):
  box = tools.Toolbox(
      wiki_engine, config=tools.ToolboxConfig(tools=ALL, top_k=2)
  )
  _run(box, 'search', query=['Lothair II'])
  call = ToolCall(name=name, arguments=arguments)
  result = asyncio.run(box.execute(call))
  assert isinstance(result, tools.ToolResult) and result.text
  json.dumps(result.data)


class _LostShard:
  """A backend whose searches and reads fail as a cluster's do after a
  node with an unreplicated shard died (`es_backend._check_answer`)."""

  def __init__(self, backend):
    self.backend = backend
    self.lost = False

  def __getattr__(self, name):
    return getattr(self.backend, name)

  def _fail(self):
    raise es_client.ShardFailureError(
        'search of test-doc heard from 2 of 3 shards'
        ' (no_shard_available_action_exception); its answer would be partial'
    )

  def view_rankings(self, *args, **kwargs):
    if self.lost:
      self._fail()
    return self.backend.view_rankings(*args, **kwargs)

  def get_documents(self, doc_ids):
    if self.lost:
      self._fail()
    return self.backend.get_documents(doc_ids)


def _service(backend):
  """The real service app over `backend`, reached as agents reach it."""
  engine = SearchEngine(backend)
  app = service.create_app(engine, service.ServiceLimits())
  return client_lib.HttpSearch(
      'http://test',
      transport=httpx.ASGITransport(app=app),
      retries=1,
      backoff_s=0.01,
  )


def test_a_lost_shard_is_a_failed_call_the_agent_sees_never_a_list(
    wiki_engine,
):
  backend = _LostShard(wiki_engine.backend)
  http = _service(backend)
  box = tools.Toolbox(http, config=tools.ToolboxConfig(tools=ALL, top_k=3))
  ok = _run(box, 'search', query=['Teutberga'])
  assert ok.error is None and ok.data['queries'][0]['results']
  backend.lost = True
  for name, arguments in [
      ('search', {'query': ['Lothair II', 'Teutberga']}),
      ('visit', {'ref_id': ['r1'], 'goal': 'who'}),
      ('open', {'ref_id': 'r1'}),
  ]:
    result = _run(box, name, **arguments)
    assert result.error.startswith('SearchServiceError: ')
    assert (
        'ShardFailureError' in result.error and '2 of 3 shards' in result.error
    )
    assert result.text.startswith('Error: the search service failed (')
    assert 'ShardFailureError' in result.text
    assert result.data == {'service_error': True} and result.urls == ()
  backend.lost = False  # healed: the next call answers again
  again = _run(box, 'search', query=['Teutberga'])
  assert again.error is None and again.data == ok.data
  asyncio.run(http.aclose())


def test_the_react_loop_records_a_lost_shard_as_a_tool_error(wiki_engine):
  backend = _LostShard(wiki_engine.backend)
  backend.lost = True
  box = tools.Toolbox(SearchEngine(backend))
  call = '<tool_call>{"name": "search", "arguments": {"query": ["x"]}}'
  llm = ScriptedLLM([call + '</tool_call>', '<answer>unknown</answer>'])
  agent = react.ReActAgent(llm, react.AgentConfig())
  traj = asyncio.run(
      agent.run(
          traj_id='t',
          task_id='q',
          question='q?',
          system_prompt='s',
          toolbox=box,
      )
  )
  assert traj.status == 'answered' and traj.error is None
  [tool] = [m for m in traj.messages if m.role == 'tool']
  assert tool.name == 'search'
  assert tool.content.startswith('Error: the search service failed (search')
  assert 'ShardFailureError' in tool.content


def test_service_errors_raise_propagates_the_failure(wiki_engine):
  backend = _LostShard(wiki_engine.backend)
  backend.lost = True
  box = tools.Toolbox(
      SearchEngine(backend),
      config=tools.ToolboxConfig(service_errors='raise'),
  )
  with pytest.raises(client_lib.SearchServiceError, match='ShardFailure'):
    _run(box, 'search', query=['x'])
  with pytest.raises(ValueError, match='service_errors'):
    tools.ToolboxConfig(service_errors='ignore')


def test_a_service_that_times_out_is_a_failed_call_too():
  def timeout(request):
    raise httpx.ReadTimeout('timed out', request=request)

  http = client_lib.HttpSearch(
      'http://test',
      transport=httpx.MockTransport(timeout),
      retries=1,
      backoff_s=0.01,
  )
  box = tools.Toolbox(http)
  result = _run(box, 'search', query=['Teutberga'])
  assert 'unreachable after 2 attempt(s): ReadTimeout' in result.error
  assert result.text.startswith('Error: the search service failed (')
  assert result.data == {'service_error': True}
