"""Tests for the embedded tantivy backend on small hand-made documents."""

import pytest

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import backend
from search_agent.search import sites
from search_agent.search import tantivy_index
from search_agent.search.parser import parse_query
from search_agent.search.tantivy_backend import TantivyBackend

_FILLER = ' '.join(f'filler{i}' for i in range(300))
DOCS = [
    Document(
        doc_id='whale',
        title='Blue whale',
        url='https://en.wikipedia.org/wiki/Blue_whale',
        text='The blue whale is a marine mammal. Blue whales are the largest'
        ' animals known to have lived.',
        links=('mammal',),
    ),
    Document(
        doc_id='mammal',
        title='Mammal',
        url='https://en.wikipedia.org/wiki/Mammal',
        text='Mammals are vertebrate animals. The whale and the dolphin are'
        ' marine mammals.',
    ),
    Document(
        doc_id='blog',
        title='Whale watching trips',
        url='https://www.example.com/whales',
        text='We went whale watching and saw a blue whale near the boat.',
    ),
    Document(
        doc_id='long',
        title='Oceans',
        url='https://oceans.org/long',
        text=f'{_FILLER} krill feed baleen whales {_FILLER}',
    ),
]


@pytest.fixture(scope='module')
def index_dir(tmp_path_factory):
  path = tmp_path_factory.mktemp('tantivy') / 'index'
  config = backend.IndexBuildConfig(
      passage_window_words=64, passage_stride_words=48
  )
  with tantivy_index.IndexWriter(path, config) as w:
    w.add_all(DOCS)
  assert w.counts['doc'] == 4
  assert w.counts['passage'] > 4  # the long document is split
  return path


@pytest.fixture(scope='module')
def tantivy(index_dir):
  b = TantivyBackend(index_dir)
  yield b
  b.close()


def _rank(b, text, k=10):
  return b.view_rankings([parse_query(text)], k)[0]


def test_all_views_present_and_stemmed(tantivy):
  r = _rank(tantivy, 'whales')
  assert set(r) == set(backend.VIEWS)
  assert set(r['doc']) == {'whale', 'mammal', 'blog', 'long'}
  assert r['title'][0] in ('whale', 'blog')


def test_phrase_is_required_in_each_view(tantivy):
  r = _rank(tantivy, '"blue whale"')
  assert set(r['doc']) == {'whale', 'blog'}
  assert set(r['passage']) == {'whale', 'blog'}
  assert r['title'] == ['whale']
  # "marine mammals": stemmed phrase matches "marine mammal" too.
  assert set(_rank(tantivy, '"marine mammals"')['doc']) == {'whale', 'mammal'}


def test_site_filter_matches_domain_and_subdomains(tantivy):
  assert set(_rank(tantivy, 'whale site:wikipedia.org')['doc']) == {
      'whale',
      'mammal',
  }
  assert _rank(tantivy, 'whale site:example.com')['doc'] == ['blog']
  assert _rank(tantivy, 'whale site:ample.com')['doc'] == []
  assert _rank(tantivy, 'whale site:www.example.com')['title'] == ['blog']


def test_passage_view_maps_to_unique_parents(tantivy):
  r = _rank(tantivy, 'krill baleen filler3')
  assert r['passage'][0] == 'long'
  assert len(r['passage']) == len(set(r['passage']))


def test_depth_k_and_batches_keep_order(tantivy):
  texts = ['whale', 'krill', 'dolphin vertebrate', 'boat']
  batch = tantivy.view_rankings([parse_query(t) for t in texts], 2)
  assert [b['doc'] for b in batch] == [
      _rank(tantivy, t, 2)['doc'] for t in texts
  ]
  assert all(len(b['doc']) <= 2 for b in batch)
  assert batch[2]['doc'][0] == 'mammal'


def test_stopword_only_query_matches_nothing(tantivy):
  assert _rank(tantivy, 'the of and') == {v: [] for v in backend.VIEWS}


def test_get_documents_round_trip(tantivy):
  got = tantivy.get_documents(['mammal', 'nope', 'whale'])
  assert got[1] is None
  assert got[0] == DOCS[1]
  assert got[2] == DOCS[0] and got[2].links == ('mammal',)
  assert tantivy.num_documents() == 4


def test_bad_k_and_missing_index(tantivy, tmp_path):
  with pytest.raises(ValueError):
    tantivy.view_rankings([parse_query('whale')], 0)
  with pytest.raises(backend.BackendError, match='index.build'):
    TantivyBackend(tmp_path)


def test_writer_rejects_duplicates_and_reuse(index_dir, tmp_path):
  with pytest.raises(backend.BackendError, match='duplicate'):
    with tantivy_index.IndexWriter(
        tmp_path / 'x', backend.IndexBuildConfig()
    ) as w:
      w.add_all([DOCS[0], DOCS[0]])
  with pytest.raises(backend.BackendError, match='already holds'):
    tantivy_index.IndexWriter(index_dir, backend.IndexBuildConfig())


@pytest.mark.parametrize('doc_id', ['', 'a\nb', 'a\rb', 'a\r\n'])
def test_writer_rejects_doc_ids_that_break_doc_ids_txt(tmp_path, doc_id):
  # doc_ids.txt is read back with universal newlines (Python) and
  # readAllLines (the Lucene backend's Java): a '\r' in a doc_id used to
  # build an index whose ordinals no longer matched, and that never opened.
  bad = Document(doc_id=doc_id, title='t', url='https://a.org/', text='x')
  with pytest.raises(backend.BackendError, match='empty or has a line break'):
    with tantivy_index.IndexWriter(
        tmp_path / 'x', backend.IndexBuildConfig()
    ) as w:
      w.add_all([DOCS[0], bad])


def test_host_suffixes_and_matching():
  assert sites.host_suffixes('https://A.b.Example.org:8080/x?q') == [
      'a.b.example.org',
      'b.example.org',
      'example.org',
      'org',
  ]
  assert sites.host_suffixes('not a url') == []
  assert sites.host_matches('https://en.wikipedia.org/x', 'wikipedia.org')
  assert not sites.host_matches('https://notwikipedia.org/x', 'wikipedia.org')


def test_query_analysis_matches_the_index():
  qa = analysis.QueryAnalyzer(stem=True, remove_stopwords=True)
  index_side = analysis.build_analyzer(stem=True, remove_stopwords=True)
  text = "The Directors of running films, John's 1990s"
  assert qa.terms(text) == index_side.analyze(text)
  # Stopwords leave position gaps, as in the index.
  assert qa.phrase('the director of the films') == [
      (1, 'director'),
      (4, 'film'),
  ]


@pytest.mark.parametrize('window, stride', [(64, 48), (128, 96), (5, 5)])
def test_passage_rows_are_the_split_passages(window, stride):
  config = backend.IndexBuildConfig(
      passage_window_words=window, passage_stride_words=stride
  )
  schema = tantivy_index.passage_schema()
  for doc in DOCS + [Document(doc_id='e', title='', url='', text='')]:
    rows = [
        r.to_dict()
        for r in tantivy_index.passage_rows(doc, 7, ['x.org', 'org'], config,
                                            schema)
    ]  # fmt: skip
    texts = [p.text for p in split_passages(doc, window, stride)]
    assert [r['text'] for r in rows] == [[t] for t in texts]
    assert all(r['doc_ord'] == [7] for r in rows)
    assert all(r['site'] == ['x.org', 'org'] for r in rows)


def test_doc_row_holds_every_field():
  row = tantivy_index.doc_row(
      DOCS[0], 3, ['en.wikipedia.org', 'wikipedia.org', 'org'],
      tantivy_index.doc_schema(),
  ).to_dict()  # fmt: skip
  assert row == {
      'doc_ord': [3],
      'doc_id': ['whale'],
      'url': [DOCS[0].url],
      'site': ['en.wikipedia.org', 'wikipedia.org', 'org'],
      'links': ['mammal'],
      'title': ['Blue whale'],
      'text': [DOCS[0].text],
  }


IDN_DOCS = [
    Document(
        doc_id='buecher',
        title='Bücher',
        url='https://www.bücher.de/krimi',
        text='A shop selling crime novels about a whale.',
    ),
    Document(
        doc_id='mueller',
        title='Müller',
        url='https://xn--mller-kva.de/whale',
        text='The miller wrote about a whale.',
    ),
    Document(
        doc_id='other',
        title='Other',
        url='https://example.de/whale',
        text='Another whale page.',
    ),
]


def test_site_filter_matches_either_spelling_of_an_idn_host(tmp_path):
  """Unicode and punycode spellings of a host reach the same pages."""
  path = tmp_path / 'index'
  with tantivy_index.IndexWriter(path, backend.IndexBuildConfig()) as w:
    w.add_all(IDN_DOCS)
  b = TantivyBackend(path)
  try:
    for query in ('whale site:bücher.de', 'whale site:xn--bcher-kva.de'):
      assert _rank(b, query)['doc'] == ['buecher'], query
    for query in ('whale site:müller.de', 'whale site:XN--MLLER-KVA.DE'):
      assert _rank(b, query)['doc'] == ['mueller'], query
  finally:
    b.close()
