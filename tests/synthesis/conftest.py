"""Fixtures: the bundled 2Wiki corpus prepared for synthesis, its index.

`prepared`: claims, anchor graphs and evidence graphs of the bundled
corpus with the :tiny config's settings (built once per session, ~3 s).
`bundled_index`/`engine`: the real tantivy index over the same corpus.
"""

import pathlib

import pytest

from search_agent.corpus.sources import CorpusSpec
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index
from search_agent.synthesis import config as config_lib
from search_agent.synthesis import pipeline
from tpu_configs import synthesis as synthesis_config


@pytest.fixture(scope='session')
def tiny_job() -> config_lib.SynthesisJob:
  return config_lib.job_from_config(synthesis_config.get_config('tiny'))


@pytest.fixture(scope='session')
def prepared(tiny_job) -> pipeline.Prepared:
  return pipeline.prepare(
      tiny_job.corpus, tiny_job.anchor, tiny_job.max_hops, 0
  )


@pytest.fixture(scope='session')
def bundled_index(tmp_path_factory) -> pathlib.Path:
  path = tmp_path_factory.mktemp('synthesis_index') / 'index'
  build_tantivy_index(CorpusSpec(), path)
  return path


@pytest.fixture(scope='session')
def engine(bundled_index):
  eng = tantivy_engine(bundled_index)
  yield eng
  eng.close()


@pytest.fixture(scope='session')
def by_title(prepared):
  return {d.title: d for d in prepared.docs.values()}
