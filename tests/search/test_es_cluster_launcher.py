"""launch/elasticsearch.sh with ELASTICSEARCH_NODES=3: a real 3-node cluster.

Starts three nodes on free ports (homes in tmp_path), checks that they form
one cluster, that `status` and `stop` find them from the port alone, that a
SIGKILLed node comes back with `start` and rejoins, and that `stop` ends
every node.
"""

import pathlib

import pytest

from tests.search import es_cluster_nodes

pytestmark = pytest.mark.slow


def test_three_nodes_form_one_cluster_rejoin_and_stop(tmp_path):
  cluster = es_cluster_nodes.OwnCluster(tmp_path / 'es', nodes=3)
  try:
    cluster.start()
    pids = [cluster.pid(i) for i in range(3)]
    assert len(set(pids)) == 3
    health = cluster.health()
    assert health['number_of_nodes'] == 3
    assert health['number_of_data_nodes'] == 3
    assert health['status'] == 'green'
    names = {
        n['name']
        for n in es_cluster_nodes.get_json(cluster.urls[2] + '/_nodes')[
            'nodes'
        ].values()
    }
    assert names == {'es-0', 'es-1', 'es-2'}
    # Each node its own home; status/stop need no ELASTICSEARCH_NODES.
    for i in range(3):
      assert (tmp_path / 'es' / f'node-{i}' / 'data').is_dir()
    assert cluster.run('status', nodes=False).returncode == 0
    cluster.kill(1)
    status = cluster.run('status', nodes=False)
    assert status.returncode == 1
    assert '2 of 3 nodes running' in status.stdout
    again = cluster.run('start')
    assert again.returncode == 0, again.stderr
    assert 'es-0 already running' in again.stdout
    assert cluster.pid(0) == pids[0] and cluster.pid(1) != pids[1]
    assert cluster.wait_green(cluster.urls[1])['number_of_nodes'] == 3
    pids = [cluster.pid(i) for i in range(3)]
  finally:
    stopped = cluster.stop()
  assert stopped.returncode == 0, stopped.stderr
  assert 'stopped 3 nodes' in stopped.stdout
  for pid in pids:
    assert not pathlib.Path(f'/proc/{pid}').exists()
  assert cluster.run('status', nodes=False).returncode == 1
