r"""Answers searches over a built index and prints the fused results.

  python -m index.query --index_dir=/tmp/idx/index \
      --query='"Carlo Rambaldi" special effects' --query='film director site:en.wikipedia.org'

A malformed query prints its error and the others still run.
"""

from absl import app
from absl import flags

from search_agent.search.parser import QueryError
from search_agent.search.tantivy_backend import tantivy_engine

_INDEX_DIR = flags.DEFINE_string('index_dir', None, 'A built index directory.')
_QUERY = flags.DEFINE_multi_string('query', [], 'A search query (repeatable).')
_K = flags.DEFINE_integer('k', 5, 'Results per query.')
flags.mark_flags_as_required(['index_dir'])


def main(argv):
  queries = list(_QUERY.value) + list(argv[1:])
  if not queries:
    raise app.UsageError('give at least one --query')
  engine = tantivy_engine(_INDEX_DIR.value)
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
