"""Fixtures for the eval tests: the tiny index of the bundled 2Wiki corpus."""

import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search.tantivy_build import build_tantivy_index


@pytest.fixture(scope='session')
def tiny_index(tmp_path_factory):
  """The first 500 bundled 2Wiki documents, indexed once (~1 s)."""
  path = tmp_path_factory.mktemp('eval_index') / 'index'
  build_tantivy_index(CorpusSpec(max_docs=500), path)
  return path
