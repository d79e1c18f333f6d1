"""A build SIGKILLed mid-load and run again ends identical to a clean one.

`python -m index.build` loads 1,500 bundled documents into the 3-node
cluster (2 shards, 1 replica, 2 streams, small requests) and is killed with
SIGKILL once both streams have checkpointed some documents; the same
command run again resumes it (skipping what was acknowledged, accepting the
409s of the chunks that were in flight) and exits 0. The result must equal
an uninterrupted build: the same doc and passage ids, no duplicate, no
missing row, the same rankings, the same manifest counts and content hash.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from search_agent.corpus import sources
from search_agent.corpus.manifest import BuildManifest
from search_agent.search import es_backend
from search_agent.search import es_build
from search_agent.search import es_bulk
from search_agent.search import es_client
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.parser import parse_query

pytestmark = [pytest.mark.elasticsearch_cluster, pytest.mark.slow]

DOCS = 1500


def _get(url: str):
  try:
    with urllib.request.urlopen(url, timeout=10) as response:
      return json.load(response)
  except urllib.error.HTTPError:
    return None


def _rows(url: str, index: str) -> list[tuple[str, int]]:
  """(_id, ord) of every row, sorted."""
  body = json.dumps(
      {'size': 10000, '_source': ['ord'], 'sort': ['_doc']}
  ).encode()
  request = urllib.request.Request(
      f'{url}/{index}/_search',
      data=body,
      headers={'Content-Type': 'application/json'},
  )
  with urllib.request.urlopen(request, timeout=60) as response:
    hits = json.load(response)['hits']['hits']
  return sorted((h['_id'], h['_source']['ord']) for h in hits)


def test_killed_build_resumes_to_the_same_index(
    elasticsearch_cluster_urls, repo_root, tmp_path
):
  urls = elasticsearch_cluster_urls
  run = uuid.uuid4().hex[:8]
  prefix, reference = f'test-resume-{run}', f'test-resume-ref-{run}'
  command = [
      sys.executable,
      '-m',
      'index.build',
      '--config=tpu_configs/search/build.py',
      f'--workdir={tmp_path / "w"}',
      '--config.backend=opensearch',
      '--config.opensearch.cluster.flavor=elasticsearch',
      f'--config.opensearch.cluster.hosts={tuple(urls)!r}',
      f'--config.opensearch.index.prefix={prefix}',
      '--config.opensearch.index.shards=2',
      '--config.opensearch.index.replicas=1',
      '--config.opensearch.bulk.actions_per_request=40',
      '--config.opensearch.bulk.streams=2',
      f'--config.corpus.max_docs={DOCS}',
      '--config.progress=False',
  ]
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu'}
  cluster = es_client.ClusterConfig(flavor='elasticsearch', hosts=urls)
  spec = sources.CorpusSpec(max_docs=DOCS)
  try:
    first = subprocess.Popen(
        command,
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    state = f'{urls[0]}/{prefix}-build-state/_doc'
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:
      marks = [_get(f'{state}/stream-{s}') for s in (0, 1)]
      if all(m and m['_source']['done'] >= 100 for m in marks):
        break
      time.sleep(0.2)
    assert first.poll() is None, 'the build ended before it could be killed'
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert _get(f'{urls[0]}/{prefix}-doc') is None  # no alias yet
    done = [_get(f'{state}/stream-{s}')['_source']['done'] for s in (0, 1)]
    assert 100 <= min(done) and max(done) < DOCS // 2

    again = subprocess.run(
        command,
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert 'resuming build' in again.stderr
    assert _get(f'{state}/stream-0') is None  # the state is gone when done

    ref_config = es_backend.EsIndexConfig(
        cluster=cluster,
        index_prefix=reference,
        bulk=es_bulk.BulkConfig(streams=1),
    )
    ref = es_build.build_es_from_spec(spec, ref_config, IndexBuildConfig())
    resumed = BuildManifest.read(tmp_path / 'w' / 'index')
    assert resumed.counts == ref.counts
    assert resumed.content_sha256 == ref.content_sha256
    for kind in ('doc', 'passage'):
      rows = _rows(urls[1], f'{prefix}-{kind}')
      assert len(rows) == len({r[0] for r in rows})  # no duplicate
      assert rows == _rows(urls[1], f'{reference}-{kind}')  # none missing
    config = es_backend.EsIndexConfig(cluster=cluster, index_prefix=prefix)
    a, b = es_backend.EsBackend(config), es_backend.EsBackend(ref_config)
    docs, _ = sources.read_corpus(spec)
    docs = list(docs)
    queries = [parse_query(d.title) for d in docs[::50]]
    assert a.view_scores(queries, 10) == b.view_scores(queries, 10)
    ids = [d.doc_id for d in docs[::7]]
    assert a.get_documents(ids) == b.get_documents(ids)
    a.close()
    b.close()
  finally:
    client = es_client.SearchClient(cluster)
    for p in (prefix, reference):
      names = sorted(client.raw.indices.get(index=f'{p}-*'))
      if names:
        client.raw.indices.delete(index=','.join(names))
    client.close()
