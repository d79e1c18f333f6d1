"""Pulse test of `python -m index.build` and tests of the build library."""

import json
import subprocess
import sys
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.manifest import BuildManifest
from search_agent.corpus.passages import split_passages
from search_agent.corpus.sources import CorpusSpec
from search_agent.search import es_backend
from search_agent.search.backend import BackendError
from search_agent.search.builder import build_index
from search_agent.search.engine import SearchEngine
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index
from tpu_configs.search import build as build_config


def test_build_binary_pulse(tmp_path, repo_root):
  out = subprocess.run(
      [
          sys.executable, '-m', 'index.build',
          '--config=tpu_configs/search/build.py:tiny',
          f'--workdir={tmp_path}',
          '--config.corpus.max_docs=50',
      ],
      cwd=repo_root, capture_output=True, text=True, timeout=120, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  index_dir = tmp_path / 'index'
  manifest = json.loads((index_dir / 'manifest.json').read_text())
  first_50 = twowiki.read_2wiki()[:50]
  passages = sum(len(split_passages(d, 128, 96)) for d in first_50)
  assert manifest['counts'] == {'doc': 50, 'passage': passages, 'title': 50}
  assert manifest['backend'] == 'tantivy'
  assert 'derived from exact' in manifest['links_note']
  assert manifest['config']['passage_window_words'] == 128
  engine = tantivy_engine(index_dir)
  assert engine.num_documents() == 50
  assert engine.search(['Teutberga'], 1)[0][0].doc_id == 'Teutberga'
  engine.close()


def test_build_binary_lucene_backend(tmp_path, repo_root):
  """--config.backend=lucene: the same counts, manifest and top hit."""
  out = subprocess.run(
      [
          sys.executable, '-m', 'index.build',
          '--config=tpu_configs/search/build.py:tiny',
          f'--workdir={tmp_path}',
          '--config.corpus.max_docs=50',
          '--config.backend=lucene',
      ],
      cwd=repo_root, capture_output=True, text=True, timeout=120, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  index_dir = tmp_path / 'index'
  manifest = json.loads((index_dir / 'manifest.json').read_text())
  first_50 = twowiki.read_2wiki()[:50]
  passages = sum(len(split_passages(d, 128, 96)) for d in first_50)
  assert manifest['counts'] == {'doc': 50, 'passage': passages, 'title': 50}
  assert manifest['backend'] == 'lucene'
  engine = lucene_engine(index_dir)
  assert engine.num_documents() == 50
  assert engine.search(['Teutberga'], 1)[0][0].doc_id == 'Teutberga'
  engine.close()


def test_manifest_hash_is_reproducible(tmp_path):
  spec = CorpusSpec(max_docs=30)
  a = build_tantivy_index(spec, tmp_path / 'a')
  b = build_tantivy_index(spec, tmp_path / 'b')
  c = build_tantivy_index(CorpusSpec(max_docs=31), tmp_path / 'c')
  assert a.content_sha256 == b.content_sha256 != c.content_sha256
  assert BuildManifest.read(tmp_path / 'a') == a
  assert a.docs_per_second > 0
  with pytest.raises(BackendError, match='already holds'):
    build_tantivy_index(spec, tmp_path / 'a')


def test_build_from_wikipedia_dump_keeps_its_links(tmp_path, shared_data):
  dump = shared_data / 'wikipedia' / 'enwiki-pages-articles-sample.xml.bz2'
  spec = CorpusSpec(kind='wikipedia_xml', path=str(dump), derive_links=False)
  m = build_tantivy_index(spec, tmp_path / 'w')
  assert m.counts['doc'] == 2
  assert m.counts['passage'] > 50  # ~8,000 words in 96-word strides
  assert 'wikilinks' in m.links_note
  engine = tantivy_engine(tmp_path / 'w')
  doc = engine.get_documents(['Accessibility'])[0]
  assert 'Assistive_technology' in doc.links
  (hits,) = engine.search(['"wheelchair ramps"'], 2)
  assert hits[0].doc_id == 'Accessibility' and 'wheelchair' in hits[0].snippet
  engine.close()


def test_build_binary_pulse_into_a_cluster(tmp_path, repo_root, cluster):
  prefix = f'test-index-build-{uuid.uuid4().hex[:8]}'
  args = [
      sys.executable, '-m', 'index.build',
      '--config=tpu_configs/search/build.py:tiny',
      f'--workdir={tmp_path}',
      '--config.backend=opensearch',
      '--config.corpus.max_docs=40',
      f'--config.opensearch.cluster.flavor={cluster.flavor}',
      f"--config.opensearch.cluster.hosts=('{cluster.url}',)",
      f'--config.opensearch.index.prefix={prefix}',
  ]  # fmt: skip
  try:
    out = subprocess.run(
        args, cwd=repo_root, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    manifest = BuildManifest.read(tmp_path / 'index')
    reference = build_tantivy_index(CorpusSpec(max_docs=40), tmp_path / 'tv')
    assert manifest.backend == cluster.flavor
    assert manifest.corpus['index_prefix'] == prefix
    assert manifest.counts == reference.counts
    assert manifest.counts['doc'] == 40
    assert manifest.content_sha256 == reference.content_sha256
    assert manifest.config == reference.config
    config = es_backend.EsIndexConfig(
        cluster=cluster.config(),
        index_prefix=prefix,
    )
    engine = SearchEngine(es_backend.EsBackend(config))
    assert engine.search(['Teutberga'], 1)[0][0].doc_id == 'Teutberga'
    engine.close()
  finally:
    cluster.delete_indices(prefix)


def test_build_rejects_an_unknown_backend(tmp_path):
  config = build_config.get_config('tiny')
  config.backend = 'solr'
  with pytest.raises(ValueError, match="backend must be one of.*'solr'"):
    build_index(config, tmp_path / 'index')
