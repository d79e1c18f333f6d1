"""Request bodies shared by the Elasticsearch and OpenSearch clients.

Two indices per corpus, mirroring the tantivy layout (`tantivy_index.py`):
`<prefix>-doc` has one row per document (`_id` = doc_id): the doc view
searches its `text` field, the title view its `title` field, and
`get_documents` reads its `_source`. `<prefix>-passage` has one row per
passage (`_id` = passage_id) with the parent `doc_id` as a keyword; the
passage view collapses its hits on `doc_id`, which keeps each parent's best
passage in score order: the parent mapping with duplicates removed,
preserving order, done inside the cluster (k parents in one request).

Both indices carry `site`: the URL host and its parent domains
(`sites.host_suffixes`), so `site:b.org` is a single term filter that
matches `b.org` and every `*.b.org`.

The analyzer mirrors `analysis.build_analyzer` step by step: runs of
Unicode alphabetic characters and numbers (`[^\\p{IsAlphabetic}\\p{N}]+`
splits: exactly Rust's `char::is_alphanumeric`, which tantivy's `simple`
tokenizer uses), long tokens dropped, lowercased, Lucene's English
stopwords removed (positions keep their gaps, as in tantivy), Snowball
English stemming (`porter2`, the algorithm tantivy's `english` stemmer
runs). Where they still differ:
  * Stemming: Lucene 9.12 ships an older revision of Snowball English than
    rust-stemmers (no R1 exceptions for "inter", "organ", "univers",
    "emerg"; no "-ogist" → "-og"; "added" → "ad"): 55 of the bundled
    corpus's 36,189 distinct words, 0.18% of its tokens, stem differently
    (`international`: "intern" here, "internat" there).
  * Length: tantivy drops tokens of 40+ UTF-8 bytes, Lucene's `length`
    filter counts UTF-16 units, so a long non-ASCII word (e.g. 14-39 CJK
    characters) is kept here and dropped there.
  * Lowercasing of a few special characters (Java's per-code-point
    `toLowerCase` vs Rust's `to_lowercase`, e.g. 'İ').
Without stemming the two produce the same tokens on the bundled corpus
(tests/search/test_es_backend.py).
"""

from typing import Any, Iterator, Sequence

from search_agent.corpus.passages import Passage
from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import sites
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.parser import ParsedQuery

ANALYZER = 'en_search'
# Field searched by each view, and the index ('doc' or 'passage') it is in.
VIEW_FIELDS = {'doc': 'text', 'passage': 'text', 'title': 'title'}
VIEW_INDEX = {'doc': 'doc', 'passage': 'passage', 'title': 'doc'}


def index_names(prefix: str) -> dict[str, str]:
  """Index name per kind: {'doc': '<prefix>-doc', 'passage': ...}."""
  return {'doc': f'{prefix}-doc', 'passage': f'{prefix}-passage'}


def analysis_settings(build: IndexBuildConfig) -> dict[str, Any]:
  """The `analysis` index settings defining `ANALYZER` for `build`."""
  filters = ['en_long', 'lowercase']
  token_filters: dict[str, Any] = {
      'en_long': {'type': 'length', 'max': analysis.MAX_TOKEN_BYTES - 1}
  }
  if build.remove_stopwords:
    filters.append('en_stop')
    token_filters['en_stop'] = {
        'type': 'stop',
        'stopwords': list(analysis.ENGLISH_STOPWORDS),
    }
  if build.stem:
    filters.append('en_stem')
    token_filters['en_stem'] = {'type': 'stemmer', 'language': 'porter2'}
  return {
      'tokenizer': {
          'en_words': {
              'type': 'pattern',
              'pattern': r'[^\p{IsAlphabetic}\p{N}]+',
          }
      },
      'filter': token_filters,
      'analyzer': {
          ANALYZER: {
              'type': 'custom',
              'tokenizer': 'en_words',
              'filter': filters,
          }
      },
  }


def create_index_body(
    kind: str,
    build: IndexBuildConfig,
    *,
    shards: int,
    replicas: int,
) -> dict[str, Any]:
  """Settings and mappings for the 'doc' or 'passage' index.

  The build config goes into the mapping's `_meta`, so that a backend
  opening the index later knows how it was analyzed and split.
  """
  text = {'type': 'text', 'analyzer': ANALYZER}
  keyword = {'type': 'keyword'}
  ordinal = {'type': 'long', 'index': False}  # sorted on, never searched
  if kind == 'doc':
    properties = {
        'doc_id': keyword,
        ORD: ordinal,
        'url': {'type': 'keyword', 'index': False, 'doc_values': False},
        'site': keyword,
        'links': {'type': 'keyword', 'index': False, 'doc_values': False},
        'title': text,
        'text': text,
    }
    source: dict[str, Any] = {}
  elif kind == 'passage':
    properties = {
        'doc_id': keyword,
        ORD: ordinal,
        'site': keyword,
        'text': text,
    }
    source = {'excludes': ['text']}
  else:
    raise ValueError(f"kind must be 'doc' or 'passage', got {kind!r}")
  return {
      'settings': {
          'index': {
              'number_of_shards': shards,
              'number_of_replicas': replicas,
              'refresh_interval': '-1',
          },
          'analysis': analysis_settings(build),
      },
      'mappings': {
          'dynamic': 'strict',
          '_meta': {'build': dict(build.__dict__)},
          '_source': source,
          'properties': properties,
      },
  }


def doc_source(doc: Document, ordinal: int = 0) -> dict[str, Any]:
  """The `_source` of a document row; `ordinal`: its place in the corpus."""
  return {
      'doc_id': doc.doc_id,
      ORD: ordinal,
      'url': doc.url,
      'site': sites.host_suffixes(doc.url),
      'links': list(doc.links),
      'title': doc.title,
      'text': doc.text,
  }


def document_from_source(source: dict[str, Any]) -> Document:
  return Document(
      doc_id=source['doc_id'],
      title=source['title'],
      url=source['url'],
      text=source['text'],
      links=tuple(source.get('links') or ()),
  )


def bulk_actions(
    doc: Document,
    passages: Sequence[Passage],
    names: dict[str, str],
    *,
    ordinal: int = 0,
    op_type: str = 'index',
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
  """(action, source) pairs indexing one document and its passages.

  Args:
    doc: The document.
    passages: Its passages.
    names: `index_names`.
    ordinal: The document's place in the corpus (ties break by it).
    op_type: 'index' (replace a row of the same _id) or 'create' (a row of
      that _id already there is refused with 409: a duplicate, or a row a
      resumed build already wrote).
  """
  yield (
      {op_type: {'_index': names['doc'], '_id': doc.doc_id}},
      doc_source(doc, ordinal),
  )
  site = sites.host_suffixes(doc.url)
  for p in passages:
    yield (
        {op_type: {'_index': names['passage'], '_id': p.passage_id}},
        {'doc_id': p.doc_id, ORD: ordinal, 'site': site, 'text': p.text},
    )


# Hits in score order, equal scores in corpus order (`ORD`: a document's
# position in the corpus it was built from; a passage row carries its
# parent's), then by doc_id: the same order whatever the shard count and
# segment layout (Lucene alone breaks ties by shard, then by internal doc
# number), and the order tantivy's single-writer index gives ties (doc
# address = insertion order). `track_scores` keeps `_score` in the hits; an
# index built without `ORD` sorts ties by doc_id only.
ORD = 'ord'
TIE_BREAK_SORT = (
    {'_score': 'desc'},
    {ORD: {'order': 'asc', 'unmapped_type': 'long'}},
    {'doc_id': 'asc'},
)
# Every shard computes BM25 with the index-wide term and document
# statistics (one extra round per search); a 1-shard search skips it.
EXACT_SEARCH_TYPE = 'dfs_query_then_fetch'


def view_search_body(query: ParsedQuery, view: str, k: int) -> dict[str, Any]:
  """One `_search` body: BM25 on the view's field over the scoring words.

  The same query as the tantivy backend builds: every keyword and phrase
  word is a scoring OR clause (summed BM25), each phrase a required, scoring
  phrase clause in the view's field (a phrase of stopwords only constrains
  nothing: `zero_terms_query: all`), and the site filter a non-scoring
  term filter on the host suffixes. Ties break by doc_id
  (`TIE_BREAK_SORT`).
  """
  field = VIEW_FIELDS[view]
  phrases = [
      {'match_phrase': {field: {'query': p, 'zero_terms_query': 'all'}}}
      for p in query.phrases
  ]
  filters = [{'term': {'site': query.site}}] if query.site else []
  body: dict[str, Any] = {
      'size': k,
      '_source': False,
      'track_total_hits': False,
      'sort': list(TIE_BREAK_SORT),
      'track_scores': True,
      'query': {
          'bool': {
              'should': [
                  {'match': {field: {'query': ' '.join(query.scoring_words())}}}
              ],
              'minimum_should_match': 1,
              'must': phrases,
              'filter': filters,
          }
      },
  }
  if view == 'passage':
    body['collapse'] = {'field': 'doc_id'}
  return body


def msearch_body(
    queries: Sequence[ParsedQuery],
    k: int,
    names: dict[str, str],
    *,
    exact: bool = True,
) -> list[dict[str, Any]]:
  """Header/body lines of one `_msearch` running every view of every query.

  Searches are in query-major order: query 0's views in `VIEW_FIELDS` order,
  then query 1's, and so on. A search never answers from part of the
  shards (`allow_partial_search_results: false`: a lost shard is an
  error, not a shorter list). With `exact`, scores are the same whatever
  the shard count (`EXACT_SEARCH_TYPE`).
  """
  header: dict[str, Any] = {'allow_partial_search_results': False}
  if exact:
    header['search_type'] = EXACT_SEARCH_TYPE
  lines: list[dict[str, Any]] = []
  for q in queries:
    for view in VIEW_FIELDS:
      lines.append({'index': names[VIEW_INDEX[view]], **header})
      lines.append(view_search_body(q, view, k))
  return lines


def hit_doc_id(hit: dict[str, Any], view: str) -> str:
  """The doc_id a search hit stands for in `view`."""
  if view == 'passage':
    return hit['fields']['doc_id'][0]
  return hit['_id']
