#!/usr/bin/env bash
# Sets up (once), starts the test OpenSearch node, checks formatting, runs
# every test (slow, opensearch and maxtext markers included).
# Extra arguments go to pytest, e.g. `bash launch/run_tests.sh tests/search`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
if [ -f launch/opensearch.sh ]; then
  bash launch/opensearch.sh start
  trap 'bash launch/opensearch.sh stop' EXIT
fi
.venv/bin/python -m pyink --check --quiet search_agent index eval launch tpu_configs tests
.venv/bin/python -m isort --check-only --quiet search_agent index eval launch tpu_configs tests
.venv/bin/python -m pytest -q "$@"
