"""build_es_from_spec: corpus spec → OpenSearch indices + manifest."""

import uuid

import pytest

from search_agent.corpus import sources
from search_agent.corpus.manifest import BuildManifest
from search_agent.search import es_backend
from search_agent.search import es_build
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.tantivy_build import build_tantivy_index

BUILD = IndexBuildConfig(passage_window_words=40, passage_stride_words=30)


def test_builds_with_the_same_manifest_as_tantivy(cluster, tmp_path):
  spec = sources.CorpusSpec(kind='2wiki', max_docs=120, derive_links=True)
  config = es_backend.EsIndexConfig(
      cluster=cluster.config(),
      index_prefix=f'test-build-{uuid.uuid4().hex[:8]}',
  )
  try:
    manifest = es_build.build_es_from_spec(
        spec, config, BUILD, manifest_dir=tmp_path / 'es'
    )
    reference = build_tantivy_index(spec, tmp_path / 'tantivy', BUILD)
    assert manifest.backend == cluster.flavor
    assert manifest.content_sha256 == reference.content_sha256
    assert manifest.counts == reference.counts
    assert manifest.counts['doc'] == 120
    assert manifest.links_note == reference.links_note
    assert BuildManifest.read(tmp_path / 'es') == manifest
    backend = es_backend.EsBackend(config)
    assert backend.manifest == manifest.__dict__
    assert backend.build_config == BUILD
    # Documents (derived links included) come back as they were read.
    linked = [d for d in sources.read_corpus(spec)[0] if d.links][:5]
    assert len(linked) == 5
    assert backend.get_documents([d.doc_id for d in linked]) == linked
    backend.close()
  finally:
    cluster.delete_indices(config.index_prefix)
