"""A real 3-node Elasticsearch cluster: its launcher, and losing a node.

The module starts its own cluster (launch/elasticsearch.sh,
ELASTICSEARCH_NODES=3, homes in tmp, free ports) so that killing nodes
disturbs no other test, and the tests run in order on it:

  * the launcher: three nodes form one cluster, `status` and `stop` find
    them from the port alone, a SIGKILLed node comes back with `start` and
    rejoins; at the end `stop` ends every node.

The node-loss tests SIGKILL one node's JVM by pid while the search service
(the real app, `service.create_app`, reached through `client.HttpSearch`
with its retries) answers the agent's tool calls (`tools.Toolbox`):

  * 3 shards x 1 replica, 16 concurrent clients: no failed tool call, every
    observation identical to the one before the kill; the node restarted by
    `launch/elasticsearch.sh start` rejoins and the index is green again;
  * 3 shards x 0 replicas: every search raises (ShardFailureError from the
    backend, a SearchServiceError from the service) and every tool call is
    a failed one whose observation names the lost shards, never a shorter
    or different list; the restarted node brings its shards back.
"""

import asyncio
import pathlib
import time
import uuid

import httpx
import pytest

from search_agent.chat.turns import ToolCall
from search_agent.corpus import twowiki
from search_agent.search import calibration
from search_agent.search import client as client_lib
from search_agent.search import es_backend
from search_agent.search import es_client
from search_agent.search import service
from search_agent.search import tools
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.parser import parse_query
from tests.search import es_own_cluster

pytestmark = pytest.mark.slow

BUILD = IndexBuildConfig()
KILLED = 1  # es-1: any node; the other two keep a master quorum


@pytest.fixture(scope='module')
def nodes(tmp_path_factory):
  cluster = es_own_cluster.OwnCluster(
      tmp_path_factory.mktemp('es-loss') / 'cluster', nodes=3
  )
  try:
    cluster.start()
    yield cluster
  finally:
    cluster.stop()


@pytest.fixture(scope='module')
def corpus():
  return twowiki.read_2wiki()[:1500]


@pytest.fixture(scope='module')
def queries(corpus) -> list[str]:
  topics, _ = calibration.make_known_item_topics(corpus, 32)
  return list(topics.values())


def test_three_nodes_form_one_cluster_and_a_killed_one_rejoins(nodes):
  pids = [nodes.pid(i) for i in range(3)]
  assert len(set(pids)) == 3
  health = nodes.health()
  assert health['number_of_nodes'] == health['number_of_data_nodes'] == 3
  assert health['status'] == 'green'
  answer = es_own_cluster.get_json(nodes.urls[2] + '/_nodes')
  assert {n['name'] for n in answer['nodes'].values()} == {
      'es-0',
      'es-1',
      'es-2',
  }
  for i in range(3):  # each node its own home
    assert (nodes.home / f'node-{i}' / 'data').is_dir()
  # status and stop need no ELASTICSEARCH_NODES: the home says how many.
  assert nodes.run('status', nodes=False).returncode == 0
  nodes.kill(1)
  status = nodes.run('status', nodes=False)
  assert status.returncode == 1
  assert '2 of 3 nodes running' in status.stdout
  again = nodes.run('start')
  assert again.returncode == 0, again.stderr
  assert 'es-0 already running' in again.stdout
  assert nodes.pid(0) == pids[0] and nodes.pid(1) != pids[1]
  assert nodes.wait_green(nodes.urls[1])['number_of_nodes'] == 3


def _config(nodes, replicas: int, **index) -> es_backend.EsIndexConfig:
  return es_backend.EsIndexConfig(
      cluster=es_client.ClusterConfig(
          flavor='elasticsearch',
          hosts=nodes.urls,
          client_retries=3,
          request_timeout_s=20,
      ),
      index_prefix=f'test-loss-{uuid.uuid4().hex[:8]}',
      shards=3,
      replicas=replicas,
      **index,
  )


def _service(engine: SearchEngine) -> client_lib.HttpSearch:
  app = service.create_app(engine, service.ServiceLimits())
  return client_lib.HttpSearch(
      'http://test',
      transport=httpx.ASGITransport(app=app),
      retries=2,
      backoff_s=0.5,
  )


def _answers(results) -> list[list[tuple[str, float]]]:
  return [[(h.doc_id, h.score) for h in r.hits] for r in results]


async def _tool_search(http, batch: list[str]) -> tools.ToolResult:
  """One agent search call (a fresh trajectory's toolbox)."""
  box = tools.Toolbox(http, config=tools.ToolboxConfig(top_k=10))
  return await box.execute(ToolCall(name='search', arguments={'query': batch}))


def _rejoin(nodes) -> None:
  started = nodes.run('start')
  assert started.returncode == 0, started.stderr
  health = nodes.wait_green(timeout_s=180)
  assert health['status'] == 'green' and health['number_of_nodes'] == 3


def test_with_a_replica_16_clients_see_no_failure_and_the_same_answers(
    nodes, corpus, queries
):
  config = _config(nodes, replicas=1)
  es_backend.build_es_index(config, corpus, BUILD)
  engine = SearchEngine(es_backend.EsBackend(config))
  http = _service(engine)
  batches = [queries[i : i + 2] for i in range(0, len(queries), 2)]

  async def run():
    before = [(await _tool_search(http, b)).text for b in batches]
    assert not any('Error' in t for t in before)
    calls, failures, differing, after_kill = 0, [], 0, 0
    killed = asyncio.Event()

    async def client(i: int, deadline: float):
      nonlocal calls, differing, after_kill
      j = i
      while time.monotonic() < deadline:
        batch = j % len(batches)
        j += 1
        result = await _tool_search(http, batches[batch])
        calls += 1
        after_kill += killed.is_set()
        if result.error is not None:
          failures.append(result.error)
          continue
        differing += result.text != before[batch]

    t0 = time.monotonic()
    tasks = [asyncio.create_task(client(i, t0 + 25)) for i in range(16)]
    await asyncio.sleep(5)
    pid = nodes.kill(KILLED)
    killed.set()
    killed_at = time.monotonic() - t0
    await asyncio.gather(*tasks)
    print(
        f'replicated: killed pid {pid} at {killed_at:.1f} s; {calls} tool'
        f' calls from 16 clients ({after_kill} after the kill),'
        f' {len(failures)} failed, {differing} differing'
    )
    return after_kill, failures, differing

  try:
    after_kill, failures, differing = asyncio.run(run())
    assert after_kill >= 16  # the searches went on without the node
    assert failures == []
    assert differing == 0
    _rejoin(nodes)
    # The restarted node serves again: searches through it alone agree.
    alone = es_backend.EsBackend(
        es_backend.EsIndexConfig(
            cluster=es_client.ClusterConfig(
                flavor='elasticsearch', hosts=(nodes.urls[KILLED],)
            ),
            index_prefix=config.index_prefix,
        )
    )
    parsed = [parse_query(q) for q in queries]
    assert alone.view_rankings(parsed, 10) == engine.backend.view_rankings(
        parsed, 10
    )
    alone.close()
  finally:
    asyncio.run(http.aclose())
    engine.close()


def test_without_replicas_every_affected_call_fails_loudly(
    nodes, corpus, queries
):
  config = _config(nodes, replicas=0, search_retries=1, retry_backoff_s=0.1)
  es_backend.build_es_index(config, corpus, BUILD)
  backend = es_backend.EsBackend(config)
  engine = SearchEngine(backend)
  http = _service(engine)
  parsed = [parse_query(q) for q in queries]
  before = backend.view_rankings(parsed, 10)
  nodes.kill(KILLED)

  async def through_service():
    outcomes, calls = [], []
    for i in range(0, len(queries), 8):
      try:
        outcomes.append(await http.search(queries[i : i + 8], 10))
      except client_lib.SearchServiceError as e:
        outcomes.append(e)
      calls.append(await _tool_search(http, queries[i : i + 8]))
    return outcomes, calls

  try:
    # 3 shards on 3 nodes, 0 replicas: every search covers the lost shard.
    for i in range(0, len(parsed), 8):
      with pytest.raises(es_client.ShardFailureError, match='shards'):
        backend.view_rankings(parsed[i : i + 8], 10)
    outcomes, calls = asyncio.run(through_service())
    assert all(isinstance(o, client_lib.SearchServiceError) for o in outcomes)
    assert 'search backend failed' in str(outcomes[0])
    # The agent's tool calls: every one failed, its observation names the
    # lost shards, and it shows no result.
    for result in calls:
      assert result.error.startswith('SearchServiceError: ')
      assert 'ShardFailureError' in result.error and 'shards' in result.error
      assert result.text.startswith('Error: the search service failed (')
      assert result.data == {'service_error': True} and result.urls == ()
    # A document on the lost shard is an error, not "no such document".
    with pytest.raises(es_client.ShardFailureError):
      backend.get_documents([d.doc_id for d in corpus[:200]])
    _rejoin(nodes)
    assert backend.view_rankings(parsed, 10) == before
    assert backend.num_documents() == len(corpus)
  finally:
    asyncio.run(http.aclose())
    engine.close()


def test_stop_stops_every_node(nodes):
  pids = [nodes.pid(i) for i in range(3)]
  stopped = nodes.stop()
  assert stopped.returncode == 0, stopped.stderr
  assert 'stopped 3 nodes' in stopped.stdout
  for pid in pids:
    assert not pathlib.Path(f'/proc/{pid}').exists()
  assert nodes.run('status', nodes=False).returncode == 1
