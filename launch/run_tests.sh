#!/usr/bin/env bash
# Sets up (once), builds the Lucene backend's jar, starts the test OpenSearch
# and Elasticsearch nodes and the 3-node Elasticsearch cluster (HTTP
# 9301-9303), checks formatting, runs every test (slow, opensearch,
# elasticsearch, elasticsearch_cluster and maxtext markers included).
# Extra arguments go to pytest, e.g. `bash launch/run_tests.sh tests/search`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
# The embedded Lucene backend's jar (its tests fail without it).
bash launch/lucene_views.sh build
# The cluster's HTTP ports (9301-9303) lie in the single node's transport
# range (9301-9400, first free port taken), so the cluster starts first.
es_cluster_port=${ELASTICSEARCH_CLUSTER_PORT:-9301}
stop_nodes() {
  bash launch/opensearch.sh stop || true
  bash launch/elasticsearch.sh stop || true
  ELASTICSEARCH_PORT=$es_cluster_port bash launch/elasticsearch.sh stop || true
}
trap stop_nodes EXIT
bash launch/opensearch.sh start
ELASTICSEARCH_PORT=$es_cluster_port ELASTICSEARCH_NODES=3 bash launch/elasticsearch.sh start
bash launch/elasticsearch.sh start
export ELASTICSEARCH_CLUSTER_PORT=$es_cluster_port
.venv/bin/python -m pyink --check --quiet search_agent index eval launch tpu_configs tests
.venv/bin/python -m isort --check-only --quiet search_agent index eval launch tpu_configs tests
# Test files in parallel (pytest-xdist), a file's tests in one worker (its
# module fixtures built once): one worker per core, at most 4 (each starts
# JAX and tiny models; 2 cores: 27 min instead of 40). TEST_WORKERS=0 runs
# them in this process, one after another.
workers=${TEST_WORKERS:-$(n=$(nproc); echo $((n < 4 ? n : 4)))}
.venv/bin/python -m pytest -q --durations=25 -n "$workers" --dist loadfile "$@"
