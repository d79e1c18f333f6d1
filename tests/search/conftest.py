"""Fixtures for the search tests: the single-node OpenSearch.

Tests marked `opensearch` use the node that `launch/opensearch.sh start`
runs (`launch/run_tests.sh` starts it before pytest and stops it after).
"""

import json
import os
import urllib.error
import urllib.request

import pytest


@pytest.fixture(scope='session')
def opensearch_url() -> str:
  """URL of a running node: $OPENSEARCH_URL, else 127.0.0.1 on the port
  launch/opensearch.sh uses ($OPENSEARCH_PORT, default 9200)."""
  port = os.environ.get('OPENSEARCH_PORT', '9200')
  url = os.environ.get('OPENSEARCH_URL', f'http://127.0.0.1:{port}')
  url = url.rstrip('/')
  health = f'{url}/_cluster/health?wait_for_status=yellow&timeout=10s'
  try:
    with urllib.request.urlopen(health, timeout=15) as response:
      status = json.load(response).get('status')
  except (urllib.error.URLError, OSError, ValueError) as e:
    pytest.fail(
        f'no OpenSearch node answers at {url} ({e}). Start one with `bash'
        ' launch/opensearch.sh start` (launch/run_tests.sh does it), or'
        ' point OPENSEARCH_URL at a running node.'
    )
  if status not in ('yellow', 'green'):
    pytest.fail(f'the OpenSearch node at {url} is {status!r}, not yellow/green')
  return url
