"""Fixtures: the bundled 2Wiki corpus as a real tantivy index, a toolbox."""

import pathlib

import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search import tools as tools_lib
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index

TOOLS = ('search', 'open', 'find')


@pytest.fixture(scope='session')
def selfplay_engine(tmp_path_factory):
  path = pathlib.Path(tmp_path_factory.mktemp('selfplay_index')) / 'index'
  build_tantivy_index(CorpusSpec(), path)
  eng = tantivy_engine(path)
  yield eng
  eng.close()


@pytest.fixture
def toolbox_factory(selfplay_engine):
  cfg = tools_lib.ToolboxConfig(tools=TOOLS, top_k=3)
  return lambda: tools_lib.Toolbox(selfplay_engine, config=cfg)
