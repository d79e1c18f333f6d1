"""Index build: corpus → doc, passage and title views (tantivy or OpenSearch).

Usage: python -m index.build --config=tpu_configs/search/build.py
--workdir=DIR (the bundled 2Wiki corpus) or ...build.py:tiny (its first
500 documents: tests and a quick look). Another corpus:
--config.corpus.kind=jsonl --config.corpus.path=docs.jsonl (kinds: 2wiki,
jsonl, wikipedia_xml, fineweb_parquet). The tantivy index goes to
DIR/index. --config.backend=opensearch loads the indices
<opensearch.index.prefix>-doc/-passage on opensearch.cluster.hosts instead
(the node of launch/opensearch.sh by default) and writes the same manifest
to DIR/index/manifest.json.
"""

import ml_collections

from tpu_configs.search import opensearch


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the build config; arg 'tiny' limits it to 500 documents."""
  c = ml_collections.ConfigDict()
  # 'tantivy' (embedded, on disk under DIR/index), 'lucene' (embedded
  # Lucene indexes under DIR/index, searched in-process through the JVM;
  # jar: `bash launch/lucene_views.sh build`) or 'opensearch' (the cluster
  # of the `opensearch` section; Elasticsearch too, by its flavor).
  c.backend = 'tantivy'
  c.corpus = ml_collections.ConfigDict(
      dict(
          kind='2wiki',
          path='',  # '' = search_agent/corpus/data (bundled 2Wiki)
          max_docs=0,  # 0 = all
          # Links from exact title mentions (2Wiki has no hyperlinks); set
          # False for dumps that carry [[links]] and for huge corpora.
          derive_links=True,
      )
  )
  # The views (backend.IndexBuildConfig; opensearch.py's `build` matches).
  c.index = ml_collections.ConfigDict(
      dict(
          # 128-word passages every 96 words (32 words of overlap): long
          # pages get local evidence windows; a 2Wiki paragraph (~71 words)
          # is one passage.
          passage_window_words=128,
          passage_stride_words=96,
          # Lucene's English stopwords, dropped: tantivy queries run faster
          # without them (docs/decisions.md).
          remove_stopwords=True,
          stem=True,  # Snowball English
      )
  )
  c.writer = ml_collections.ConfigDict(
      dict(
          heap_mb=256,  # tantivy writer memory / Lucene RAM buffer (heap/4 max)
          threads_per_view=1,  # 2 views x 1 thread = the 2 cores
      )
  )
  # backend='opensearch': cluster, index prefix/shards and bulk loading as
  # in tpu_configs/search/opensearch.py (its `build` section is `index`
  # here). `overwrite` replaces indices of the same prefix.
  cluster = opensearch.get_config('tiny' if arg == 'tiny' else None)
  c.opensearch = ml_collections.ConfigDict(
      dict(cluster=cluster.cluster, index=cluster.index, bulk=cluster.bulk)
  )
  c.overwrite = False
  c.progress = True
  if arg == 'tiny':
    c.corpus.max_docs = 500
    c.writer.heap_mb = 64
    c.progress = False
  elif arg:
    raise ValueError(f"unknown variant {arg!r}; use '' or 'tiny'")
  return c
