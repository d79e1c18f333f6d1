"""The embedded Lucene backend (a real JVM through JPype) against tantivy.

Both index the first 1,500 bundled 2Wiki documents plus four hand-made
documents on other hosts (for site:), with the same IndexBuildConfig. The
Lucene backend's fused top 10 (views and weighted RRF in Java) must overlap
tantivy's by >= 0.9 on average over 200 deterministic queries (the
OpenSearch agreement test's queries and tolerance): the two differ only
where Lucene's Snowball revision stems a word differently, where the field
length quantization or the per-term idf rounding reorders near-ties, and in
tie order. Without the jar (`bash launch/lucene_views.sh build`,
run_tests.sh does it) or a Java 21+, these tests fail, never skip.
"""

import collections
import json
import re
import shutil

import jpype
import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document
from search_agent.search import fusion
from search_agent.search import lucene_index
from search_agent.search import lucene_jvm
from search_agent.search import tantivy_index
from search_agent.search.backend import BackendError
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.backend import VIEWS
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine
from search_agent.search.guard import GuardConfig
from search_agent.search.guard import LeakageGuard
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.lucene_backend import LuceneBackend
from search_agent.search.parser import parse_query
from search_agent.search.tantivy_backend import tantivy_engine

BUILD = IndexBuildConfig(passage_window_words=32, passage_stride_words=24)
_WORD = re.compile(r'[A-Za-z]{4,}')
EXTRA = [
    Document(
        doc_id='ex-root',
        title='Qwerty film',
        url='https://example.com/a',
        text='The qwerty film was directed by a director from Paris.',
        links=('ex-sub', 'Film director'),
    ),
    Document(
        doc_id='ex-sub',
        title='Qwerty film news',
        url='https://news.example.com/b',
        text='News: director of the qwerty film, born in Paris.',
    ),
    Document(
        doc_id='ex-fake',
        title='Qwerty lookalike',
        url='https://badexample.com/c',
        text='A qwerty film clone by another director.',
    ),
    Document(
        doc_id='ex-astral',
        title='Emoji 😀 page',
        url='https://films.org/e',
        text='An 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 page 😀 about a film\u00a0director, in Paris.',
        links=('😀', ''),
    ),
    Document(
        doc_id='ex-other',
        title='Film director',
        url='https://films.org/d',
        text='An American film director and producer born in 1950.',
    ),
]


def agreement_queries(docs: list[Document], n: int) -> list[str]:
  """n queries: a document's title plus words from its text, every k-th
  doc (as test_es_agreement.py)."""
  out = []
  for d in docs[:: len(docs) // n][:n]:
    words = _WORD.findall(d.text)[3:9:2]
    out.append(' '.join([re.sub(r'[^\w ]', ' ', d.title)] + words))
  return out


def overlap(a: list[str], b: list[str]) -> float:
  if not a and not b:
    return 1.0
  return len(set(a) & set(b)) / max(len(a), len(b))


@pytest.fixture(scope='module')
def corpus() -> list[Document]:
  return twowiki.read_2wiki()[:1500] + EXTRA


@pytest.fixture(scope='module')
def dirs(corpus, tmp_path_factory):
  root = tmp_path_factory.mktemp('lucene_vs_tantivy')
  with tantivy_index.IndexWriter(root / 'tantivy', BUILD) as tv:
    tv.add_all(corpus)
  with lucene_index.LuceneIndexWriter(root / 'lucene', BUILD) as lw:
    lw.add_all(corpus)
  assert lw.counts == tv.counts
  return root / 'lucene', root / 'tantivy'


@pytest.fixture(scope='module')
def engines(dirs):
  lucene, tantivy = lucene_engine(dirs[0]), tantivy_engine(dirs[1])
  yield lucene, tantivy
  lucene.close()
  tantivy.close()


def test_fused_top10_agrees_with_tantivy(engines, corpus):
  lucene, tantivy = engines
  texts = agreement_queries(corpus[: -len(EXTRA)], 200)
  assert len(set(texts)) == 200
  lu, tv = lucene.search(texts, 10), tantivy.search(texts, 10)
  assert sum(len(h) for h in lu) >= 200 * 9
  ids = lambda hits: [h.doc_id for h in hits]
  mean = sum(overlap(ids(a), ids(b)) for a, b in zip(lu, tv)) / 200
  same = sum(ids(a) == ids(b) for a, b in zip(lu, tv))
  views = [parse_query(t) for t in texts]
  lv, tvv = lucene.backend.view_rankings(views, 10), None
  tvv = tantivy.backend.view_rankings(views, 10)
  per_view = {
      v: sum(overlap(a[v], b[v]) for a, b in zip(lv, tvv)) / 200 for v in VIEWS
  }
  print(f'fused overlap {mean:.4f} ({same} identical), views {per_view}')
  assert mean >= 0.9
  assert min(per_view.values()) >= 0.9


def test_java_fusion_is_weighted_rrf_of_its_views(engines, corpus):
  """`Views.fused` (one bridge call) = fusion.weighted_rrf over the same
  backend's view lists, scores and tie order included."""
  backend = engines[0].backend
  config = EngineConfig(
      rrf_k=3.0,
      weights={'doc': 1.0, 'passage': 0.5, 'title': 1.25},
      view_depth_factor={'title': 2},
  )
  engine = SearchEngine(backend, config)
  depths = engine.view_depths(10)
  queries = [parse_query(t) for t in agreement_queries(corpus, 40)]
  fused = engine.fused_rankings(queries, 10)
  views = backend.view_rankings(queries, max(depths.values()))
  for f, r in zip(fused, views):
    cut = {v: ids[: depths[v]] for v, ids in r.items()}
    assert f == fusion.weighted_rrf(cut, config.weights, config.rrf_k)


@pytest.mark.parametrize('k', [1, 5, 50])
def test_passage_parents_pruned_equal_every_passage_collapsed(
    engines, corpus, k
):
  """The passage view's collector (best passage per parent, pruned at the
  k-th parent's score) ranks exactly as collapsing every matching passage,
  ties included; 24-word windows put several passages in each parent."""
  backend = engines[0].backend
  texts = agreement_queries(corpus[: -len(EXTRA)], 100)
  texts += [
      'film',
      'director born',
      '"film director" born',
      'qwerty site:films.org',
  ]
  for text in texts:
    q = parse_query(text)
    pruned = backend.rank_view(q, 'passage', k)
    # pylint: disable-next=protected-access
    every = backend._ids(
        backend._views.passageParentsExhaustive(*backend._args(q), k)
    )
    assert pruned == every, text
    assert len(pruned) == len(set(pruned))


@pytest.mark.parametrize(
    'text',
    [
        'qwerty film site:example.com',
        'qwerty site:news.example.com',
        'director site:films.org',
        'film director site:nowhere.net',
        '"qwerty film" director',
        '"film director" born',
        '"of the" qwerty',
        '"born in Paris"',
        '"qwerty film" site:example.com',
        'the of and',
    ],
)
def test_phrases_and_site_give_the_same_sets(engines, text):
  (a,), (b,) = (
      e.backend.view_rankings([parse_query(text)], 10) for e in engines
  )
  for view in VIEWS:
    assert set(a[view]) == set(b[view]), view


def test_documents_and_snippets_match_tantivy(engines, corpus):
  lucene, tantivy = engines
  ids = ['ex-root', 'nope', corpus[7].doc_id, 'ex-astral', 'ex-root']
  got = lucene.get_documents(ids)
  assert got == tantivy.get_documents(ids)
  assert got[0] == got[4] == EXTRA[0] and got[1] is None
  assert got[2] == corpus[7] and got[3] == EXTRA[3]
  assert lucene.get_documents([]) == []
  (a,), (b,) = (e.search(['qwerty film director born'], 3) for e in engines)
  assert [h.doc_id for h in a] == [h.doc_id for h in b]
  assert [h.snippet for h in a] == [h.snippet for h in b]
  assert all(h.snippet for h in a)


def test_one_call_search_gives_the_general_paths_hits(
    dirs, corpus, monkeypatch
):
  """The Lucene engine answers a query with one Java call (`Views.search`:
  fused ranking, titles, URLs, snippets) and gets the hits of the general
  path (fused rankings, documents, snippets; forced here by a reranker
  that changes nothing): with a guard blocking every third page and the
  top 5 of one query (more than the k + 2 candidates fetched: that query
  goes the general way, as does any query with fewer than k unblocked
  among them while more fused), a backend that has learned no words yet (the
  second call for unanalyzed words), phrases, a site filter and a page
  Java declines to cut (astral characters: Python cuts it)."""
  texts = agreement_queries(corpus[: -len(EXTRA)], 100)
  texts += [
      '"film director" Paris',
      'film director site:films.org',
      'Emoji page film director Paris',
  ]
  plain = lucene_engine(dirs[0])
  top5 = [h.url for h in plain.search([texts[0]], 5)[0]]
  plain.close()
  blocked = tuple(d.url for d in corpus[::10]) + tuple(top5)
  guard = LeakageGuard(GuardConfig(blocked_patterns=blocked))
  blocked_ids = {d.doc_id for d in corpus if guard.is_blocked(d.url)}
  backend = LuceneBackend(dirs[0])
  calls = collections.Counter()

  def counted(name):
    method = getattr(backend, name)

    def call(*args, **kwargs):
      calls[name] += 1
      return method(*args, **kwargs)

    return call

  for name in ('fused_candidates', 'fused_rankings', 'snippets'):
    monkeypatch.setattr(backend, name, counted(name))
  kwargs = dict(guard=guard, analyzer=backend.analyzer, idf=backend.term_idf)
  one = SearchEngine(backend, **kwargs)
  general = SearchEngine(backend, **kwargs, reranker=lambda q, hits: hits)
  try:
    got = {k: [one.search([t], k)[0] for t in texts] for k in (1, 10)}
    one_calls = dict(calls)
    thinned = 0
    for k in (1, 10):
      assert got[k] == general.search(texts, k), k
      assert one.search(texts, k) == got[k]  # a batch, on the pool
      for fused in general.fused_rankings(list(map(parse_query, texts)), k):
        kept = [d for d, _ in fused[: k + 2] if d not in blocked_ids]
        thinned += len(kept) < k and len(fused) > k + 2
  finally:
    backend.close()
  assert one_calls['fused_candidates'] == 2 * len(texts)
  assert one_calls['fused_rankings'] == thinned >= 2  # texts[0] at k = 1, 10
  assert one_calls['snippets'] >= 1
  hits = [h for hits in got[10] for h in hits]
  assert len(hits) >= 9 * len(texts)
  assert not any(guard.is_blocked(h.url) for h in hits)
  assert 'ex-astral' in {h.doc_id for h in hits}
  assert all(h.snippet for h in hits)


def test_bad_input_errors(engines, dirs, tmp_path):
  lucene = engines[0]
  with pytest.raises(ValueError, match='k must be'):
    lucene.search(['film'], 0)
  with pytest.raises(ValueError, match='k must be'):
    lucene.backend.view_rankings([parse_query('film')], 0)
  no_title = SearchEngine(lucene.backend, EngineConfig(weights={'doc': 1.0}))
  with pytest.raises(ValueError, match='no fusion weight'):
    no_title.search(['film'], 5)
  with pytest.raises(BackendError, match='already holds an index'):
    lucene_index.LuceneIndexWriter(dirs[0], BUILD)
  with pytest.raises(BackendError, match='not a built Lucene index'):
    LuceneBackend(dirs[1])  # a tantivy dir
  with pytest.raises(BackendError, match='duplicate doc_id'):
    with lucene_index.LuceneIndexWriter(tmp_path / 'dup', BUILD) as w:
      w.add_all([EXTRA[0], EXTRA[0]])
  with pytest.raises(lucene_jvm.LuceneUnavailable, match='lucene_views.sh'):
    lucene_jvm.classpath(tmp_path / 'missing.jar')


def test_bm25_parameters_per_view_change_the_ranking(dirs):
  queries = [parse_query('american film director born 1950')]
  default = LuceneBackend(dirs[0])
  flat = LuceneBackend(dirs[0], bm25={v: (1.2, 0.0) for v in VIEWS})
  try:
    a, b = default.view_rankings(queries, 20), flat.view_rankings(queries, 20)
    assert set(a[0]['doc']) & set(b[0]['doc'])
    assert a[0]['doc'] != b[0]['doc']  # b=0: no length normalization
    with pytest.raises(ValueError, match='bm25 needs'):
      LuceneBackend(dirs[0], bm25={'doc': (1.2, 0.75)})
  finally:
    default.close()
    flat.close()


def test_served_config_builds_and_searches(tmp_path):
  """serve.py's tiny config with backend=lucene builds and serves."""
  from search_agent.search import service  # pylint: disable=g-import-not-at-top
  from tpu_configs.search import serve  # pylint: disable=g-import-not-at-top

  c = serve.get_config('tiny')
  c.backend = 'lucene'
  c.corpus.max_docs = 200
  engine = service.open_engine(c, tmp_path)
  try:
    assert engine.num_documents() == 200
    (hits,) = engine.search(['film director'], 5)
    assert len(hits) == 5 and all(h.snippet for h in hits)
    manifest = json.loads((tmp_path / 'index' / 'manifest.json').read_text())
    assert manifest['backend'] == 'lucene'
  finally:
    engine.close()


def test_a_failed_build_can_be_rerun_in_its_directory(tmp_path, monkeypatch):
  # Batches of 1: the documents before the failure reach Lucene.
  monkeypatch.setattr(lucene_index, 'BATCH_DOCS', 1)
  path = tmp_path / 'retry'
  with pytest.raises(BackendError, match='duplicate doc_id'):
    with lucene_index.LuceneIndexWriter(path, BUILD) as w:
      w.add_all([EXTRA[0], EXTRA[1], EXTRA[0]])
  # The aborted build's store files were in the way (FileAlreadyExists).
  with lucene_index.LuceneIndexWriter(path, BUILD) as w:
    w.add_all(EXTRA)
  backend = LuceneBackend(path)
  try:
    assert backend.num_documents() == len(EXTRA)
    assert backend.get_documents(['ex-sub', 'ex-other']) == EXTRA[1:5:3]
  finally:
    backend.close()


def test_a_refused_writer_releases_what_it_opened(tmp_path):
  # A committed passage index but no doc index: the writer opens doc/, then
  # refuses passage/; doc/'s write lock must not stay held in this JVM.
  path = tmp_path / 'half'
  with lucene_index.LuceneIndexWriter(path, BUILD) as w:
    w.add_all(EXTRA)
  (path / lucene_index.CONFIG_FILE).unlink()
  shutil.rmtree(path / 'doc')
  with pytest.raises(BackendError, match='already holds an index'):
    lucene_index.LuceneIndexWriter(path, BUILD)
  shutil.rmtree(path / 'passage')
  with lucene_index.LuceneIndexWriter(path, BUILD) as w:
    w.add_all(EXTRA[:2])
  backend = LuceneBackend(path)
  try:
    assert backend.num_documents() == 2
  finally:
    backend.close()


def test_the_writer_buffers_fit_the_jvm_heap(tmp_path):
  # writer.heap_mb is the Lucene RAM buffer of each of the two indexes: at
  # 1,024 (or 512, with the batch) they outgrew the 1 GB heap and the
  # build died of OutOfMemoryError.
  with lucene_index.LuceneIndexWriter(
      tmp_path / 'big', BUILD, ram_buffer_mb=4096
  ) as w:
    heap_mb = int(jpype.java.lang.Runtime.getRuntime().maxMemory()) / 2**20
    assert heap_mb > 0
    assert w._writer.ramBufferMb() <= heap_mb / 4  # pylint: disable=protected-access
    w.add_all(EXTRA)
  with lucene_index.LuceneIndexWriter(
      tmp_path / 'small', BUILD, ram_buffer_mb=16
  ) as w:
    assert w._writer.ramBufferMb() == 16  # pylint: disable=protected-access
