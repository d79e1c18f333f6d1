"""The OpenSearch backend against the real single-node OpenSearch.

A slice of the bundled 2Wiki corpus plus a few hand-made documents whose
answers are known: phrase order, site: with subdomains and look-alike hosts,
a long document split into many passages.
"""

import dataclasses
import math
import uuid

import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import es_backend
from search_agent.search import es_bodies
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.parser import parse_query

BUILD = IndexBuildConfig(passage_window_words=20, passage_stride_words=15)


def _handmade() -> list[Document]:
  long_text = ' '.join(
      ['zorblax glimmers in the valley'] * 4
      + [f'filler{i} words' for i in range(40)]
  )
  return [
      Document(
          doc_id='ex-root',
          title='Qwerty root',
          url='https://example.com/a',
          text='The qwerty gadget ships alpha beta.',
      ),
      Document(
          doc_id='ex-sub',
          title='Qwerty news',
          url='http://news.Example.com:8080/b',
          text='News about qwerty gadgets: beta alpha.',
      ),
      Document(
          doc_id='ex-fake',
          title='Qwerty lookalike',
          url='https://badexample.com/c',
          text='A qwerty clone, alpha beta.',
      ),
      Document(
          doc_id='long', title='Valley', url='https://v.org/l', text=long_text
      ),
  ]


@pytest.fixture(scope='module')
def corpus() -> list[Document]:
  return twowiki.read_2wiki()[:300] + _handmade()


@pytest.fixture(scope='module')
def config(cluster, corpus):
  cfg = es_backend.EsIndexConfig(
      cluster=cluster.config(),
      index_prefix=f'test-backend-{uuid.uuid4().hex[:8]}',
  )
  stats = es_backend.build_es_index(cfg, corpus, BUILD)
  assert stats['documents'] == len(corpus)
  yield cfg
  cluster.delete_indices(cfg.index_prefix)


@pytest.fixture(scope='module')
def backend(config):
  b = es_backend.EsBackend(config)
  yield b
  b.close()


def _rank(backend, text, k=10):
  (views,) = backend.view_rankings([parse_query(text)], k)
  assert set(views) == set(VIEWS)
  return views


TRICKY = (
    'नमस्ते café cafe\u0301 ΑΘΗΝΑ Running’s O’Brien 1990s x_y ﬁne Ⅻ ½ ²'
    ' Zürich-based "The Lord of the Rings" e-mail 3.14 C++ naïve'
)


def _analyze(client, build: IndexBuildConfig, text: str) -> list[str]:
  """Tokens of `text` under es_bodies' analyzer for `build` (inline)."""
  settings = es_bodies.analysis_settings(build)
  names = settings['analyzer'][es_bodies.ANALYZER]['filter']
  body = {
      'tokenizer': settings['tokenizer']['en_words'],
      'filter': [settings['filter'].get(n, n) for n in names],
      'text': text,
  }
  return [t['token'] for t in client.indices.analyze(body=body)['tokens']]


def _texts(corpus) -> list[str]:
  return [TRICKY] + [d.text for d in corpus[::3]] + [d.title for d in corpus]


def test_unstemmed_analysis_matches_tantivy_token_for_token(
    cluster, config, corpus
):
  client = cluster.raw()
  build = IndexBuildConfig(stem=False)
  tantivy_analyzer = analysis.build_analyzer(stem=False, remove_stopwords=True)
  for text in _texts(corpus):
    assert _analyze(client, build, text) == tantivy_analyzer.analyze(text)


def test_stemmers_differ_on_few_words(cluster, config, corpus):
  """Lucene's Snowball English predates the revision tantivy's
  rust-stemmers implements (R1 exceptions such as "inter", "organ",
  "univers"; "-ogist" → "-og"); OpenSearch 2's Lucene 9.12 also stems
  "added" → "ad", where Elasticsearch 9's Lucene 10 gives "add"."""
  client = cluster.raw()
  tantivy_analyzer = analysis.build_analyzer(stem=True, remove_stopwords=True)
  same = total = 0
  for text in _texts(corpus):
    ours, theirs = _analyze(client, BUILD, text), tantivy_analyzer.analyze(text)
    assert len(ours) == len(theirs)
    same += sum(a == b for a, b in zip(ours, theirs))
    total += len(ours)
  assert same / total > 0.995
  known = 'international biologist organized added universities'
  added = 'ad' if cluster.flavor == 'opensearch' else 'add'
  assert _analyze(client, BUILD, known) == [
      'intern', 'biologist', 'organ', added, 'univers'
  ]  # fmt: skip
  assert tantivy_analyzer.analyze(known) == [
      'internat', 'biolog', 'organiz', 'add', 'universiti'
  ]  # fmt: skip


def test_opens_with_the_build_config_and_counts(backend, corpus):
  assert backend.build_config == BUILD
  assert backend.num_documents() == len(corpus)


def test_phrase_is_required_and_ordered(backend):
  assert _rank(backend, 'qwerty')['doc'][:3] != []
  views = _rank(backend, '"alpha beta"')
  assert sorted(views['doc']) == ['ex-fake', 'ex-root']
  assert 'ex-sub' not in views['passage']
  assert _rank(backend, '"beta alpha" qwerty')['doc'] == ['ex-sub']


def test_site_filter_takes_subdomains_not_lookalikes(backend):
  views = _rank(backend, 'qwerty site:example.com')
  assert sorted(views['doc']) == ['ex-root', 'ex-sub']
  assert sorted(views['title']) == ['ex-root', 'ex-sub']
  assert sorted(views['passage']) == ['ex-root', 'ex-sub']
  assert _rank(backend, 'qwerty site:news.example.com')['doc'] == ['ex-sub']


def test_passages_map_to_parents_once(backend):
  views = _rank(backend, 'zorblax valley')
  # The long document has 4 passages with "zorblax"; it is listed once.
  assert views['passage'][0] == 'long'
  assert views['passage'].count('long') == 1
  assert views['title'] == ['long']


def test_batch_matches_single_queries_and_k_caps(backend):
  texts = ['american film director', 'qwerty', 'river in europe']
  batch = backend.view_rankings([parse_query(t) for t in texts], 5)
  assert batch == [_rank(backend, t, 5) for t in texts]
  assert all(len(v) <= 5 for views in batch for v in views.values())
  assert len(batch[0]['doc']) == 5


def test_large_batches_are_split_into_several_msearch(config, backend):
  small = es_backend.EsBackend(
      dataclasses.replace(config, queries_per_msearch=2)
  )
  try:
    queries = [parse_query(t) for t in ['qwerty', 'valley', 'film', 'x y']]
    assert small.view_rankings(queries, 4) == backend.view_rankings(queries, 4)
  finally:
    small.close()
  with pytest.raises(ValueError, match='queries_per_msearch >= 1'):
    dataclasses.replace(config, queries_per_msearch=0)


def test_stopword_only_phrase_constrains_nothing(backend):
  assert _rank(backend, '"of the" qwerty') == _rank(backend, 'qwerty')


def test_stemming_and_stopwords(backend):
  # "directors" and "directed" stem to "director"/"direct"; "the of" are
  # stopwords, so they neither match nor block a match.
  assert _rank(backend, 'gadgets')['doc'][:1] in (['ex-sub'], ['ex-root'])
  assert _rank(backend, 'the of')['doc'] == []


def test_get_documents_in_order_with_unknown_ids(backend, corpus):
  got = backend.get_documents(['ex-sub', 'nope', corpus[0].doc_id])
  assert got == [corpus[-3], None, corpus[0]]
  assert backend.get_documents([]) == []


def test_existing_index_is_an_error_without_overwrite(config, corpus):
  with pytest.raises(BackendError, match='already exists'):
    es_backend.build_es_index(config, corpus[:1], BUILD)


def test_missing_index_is_a_clear_error(cluster):
  cfg = es_backend.EsIndexConfig(
      cluster=cluster.config(),
      index_prefix='test-no-such-index',
  )
  with pytest.raises(BackendError, match='not found.*build it first'):
    es_backend.EsBackend(cfg)


def test_duplicate_doc_ids_are_refused(cluster, corpus):
  cfg = es_backend.EsIndexConfig(
      cluster=cluster.config(),
      index_prefix=f'test-dup-{uuid.uuid4().hex[:8]}',
  )
  try:
    with pytest.raises(BackendError, match='duplicate doc_id'):
      es_backend.build_es_index(cfg, [corpus[0], corpus[0]], BUILD)
  finally:
    cluster.delete_indices(cfg.index_prefix)


def test_term_idf_is_the_corpus_bm25_idf_of_the_doc_view(backend, corpus):
  """Snippets score with corpus idf, as tantivy's and Lucene's do."""
  analyzer = analysis.QueryAnalyzer(stem=True, remove_stopwords=True)
  terms = analyzer.terms('born film queen American Zzyzzyvaqx')
  docs = [set(analyzer.terms(d.text)) for d in corpus]
  n = len(corpus)
  expected = {}
  for t in terms:
    df = sum(t in d for d in docs)
    expected[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
  got = backend.term_idf(terms)
  assert got.keys() == expected.keys()
  for t in terms:
    assert got[t] == pytest.approx(expected[t], rel=1e-9), t
  assert got[terms[-1]] == max(got.values())  # df 0
  assert backend.term_idf(terms[:2]) == {t: got[t] for t in terms[:2]}
