"""Fixtures for the search tests: the bundled corpus index, OpenSearch.

`wiki_index`/`wiki_engine`: the bundled 2Wiki corpus indexed once per test
session (tantivy, default build config, as `index.build` writes it).
Tests marked `opensearch` use the node that `launch/opensearch.sh start`
runs (`launch/run_tests.sh` starts it before pytest and stops it after).
"""

import json
import os
import pathlib
import urllib.error
import urllib.request

import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search.engine import SearchEngine
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index


@pytest.fixture(scope='session')
def wiki_index(tmp_path_factory) -> pathlib.Path:
  """The bundled 2Wiki corpus (6,119 documents) as a tantivy index, built
  once per session with index.build's builder and default config (~3 s)."""
  path = tmp_path_factory.mktemp('bundled_2wiki') / 'index'
  build_tantivy_index(CorpusSpec(), path)
  return path


@pytest.fixture(scope='session')
def wiki_engine(wiki_index):
  """A SearchEngine over `wiki_index` with the default engine config and
  guard; shared by the whole session, so tests must not close or mutate
  it (wrap its backend in a new SearchEngine to change settings)."""
  engine: SearchEngine = tantivy_engine(wiki_index)
  yield engine
  engine.close()


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
