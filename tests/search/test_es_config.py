"""tpu_configs/search/opensearch.py and its conversion to EsIndexConfig."""

import dataclasses
import importlib.util
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.search import es_backend
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.parser import parse_query


def _get_config(repo_root, arg=None, name='opensearch'):
  path = repo_root / 'tpu_configs' / 'search' / f'{name}.py'
  spec = importlib.util.spec_from_file_location(f'{name}_config', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config(arg)


def test_default_config_converts_to_the_library_defaults(repo_root):
  config = _get_config(repo_root)
  es = es_backend.es_index_config(config)
  assert es.cluster.hosts == ('http://127.0.0.1:9200',)
  assert es.index_prefix == 'search-agent-2wiki'
  assert (es.shards, es.replicas) == (1, 0)
  assert es.bulk == es_backend.es_bulk.BulkConfig()
  assert IndexBuildConfig(**config.build) == IndexBuildConfig()


def test_serve_config_opensearch_section_converts(repo_root):
  serve = _get_config(repo_root, name='serve')
  ours = _get_config(repo_root)
  es = es_backend.es_index_config(serve.opensearch)
  assert es == es_backend.es_index_config(ours)


def test_unknown_field_is_an_error(repo_root):
  config = _get_config(repo_root)
  config.bulk.max_retires = 3
  with pytest.raises(TypeError, match='max_retires'):
    es_backend.es_index_config(config)


def test_unknown_variant_is_an_error(repo_root):
  with pytest.raises(ValueError, match="unknown variant 'huge'"):
    _get_config(repo_root, 'huge')


def test_tiny_config_builds_and_answers(repo_root, cluster):
  config = _get_config(repo_root, 'tiny')
  config.cluster.flavor = cluster.flavor
  config.cluster.hosts = (cluster.url,)
  es = dataclasses.replace(
      es_backend.es_index_config(config),
      index_prefix=f'test-tiny-{uuid.uuid4().hex[:8]}',
  )
  docs = twowiki.read_2wiki()[:40]
  try:
    stats = es_backend.build_es_index(
        es, docs, IndexBuildConfig(**config.build)
    )
    assert stats['documents'] == 40
    # 40 docs + passages < 200 actions: one request per stream.
    assert stats['requests'] == config.bulk.streams
    backend = es_backend.EsBackend(es)
    (views,) = backend.view_rankings([parse_query(docs[7].title)], 3)
    assert views['title'][0] == docs[7].doc_id
    backend.close()
  finally:
    cluster.delete_indices(es.index_prefix)
