r"""Answers searches over a built index and prints the fused results.

  python -m index.query --index_dir=/tmp/idx/index \
      --query='"Carlo Rambaldi" special effects' --query='film director site:en.wikipedia.org'

Another backend, as a serve config opens it (e.g. an Elasticsearch cluster):

  python -m index.query --config=tpu_configs/search/serve.py \
      --config.backend=opensearch --config.opensearch.cluster.flavor=elasticsearch \
      --config.opensearch.cluster.hosts="('http://127.0.0.1:9301',)" --query=...

A cluster build's directory (`index.build --config.backend=opensearch`
writes its location there) or a location opens the cluster too:

  python -m index.query --index_dir=/tmp/es-build/index --query=...
  python -m index.query \
      --index_dir=elasticsearch://127.0.0.1:9301,127.0.0.1:9302/PREFIX ...

A malformed query prints its error and the others still run.
"""

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.search import locations
from search_agent.search import service
from search_agent.search.parser import QueryError

_INDEX_DIR = flags.DEFINE_string(
    'index_dir',
    None,
    'A built index (without --config): a tantivy directory, a cluster'
    " build's directory or a cluster location (search/locations.py).",
)
_CONFIG = config_flags.DEFINE_config_file(
    'config',
    None,
    'A serve config (tpu_configs/search/serve.py): its backend, index and'
    ' engine instead of the tantivy index in --index_dir.',
    lock_config=True,
)
_QUERY = flags.DEFINE_multi_string('query', [], 'A search query (repeatable).')
_K = flags.DEFINE_integer('k', 5, 'Results per query.')


def main(argv):
  queries = list(_QUERY.value) + list(argv[1:])
  if not queries:
    raise app.UsageError('give at least one --query')
  if bool(_CONFIG.value) == bool(_INDEX_DIR.value):
    raise app.UsageError('give exactly one of --index_dir and --config')
  if _CONFIG.value:
    # The config's index_dir (for tantivy/lucene) or its cluster section.
    engine = service.open_engine(_CONFIG.value, workdir='.')
  else:
    engine = locations.open_engine(_INDEX_DIR.value)
  try:
    results = engine.search_or_errors(queries, _K.value)
  finally:
    engine.close()
  for query, hits in zip(queries, results):
    print(f'\n=== {query}')
    if isinstance(hits, QueryError):
      print(f'  error: {hits}')
      continue
    if not hits:
      print('  (no results)')
    for rank, hit in enumerate(hits, 1):
      print(f'  {rank}. {hit.title} <{hit.url}> [{hit.score:.4f}]')
      print(f'     {hit.snippet}')


if __name__ == '__main__':
  app.run(main)
