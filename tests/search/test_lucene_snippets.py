"""Snippets cut in Java by the Lucene backend (Snippets.java) against
`snippets.make_snippet`: the same string for every document Java does not
decline, over real 2Wiki documents and hand-made texts that exercise line
ends, abbreviations, initials, closing quotes, long sentences, Unicode case
and characters outside the BMP. Needs the jar (`bash launch/lucene_views.sh
build`) and a Java 21+; fails, never skips, without them.
"""

import random
import re

import pytest

from search_agent.corpus import twowiki
from search_agent.corpus.record import Document
from search_agent.search import lucene_index
from search_agent.search import snippets
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.engine import EngineConfig
from search_agent.search.lucene_backend import lucene_engine
from search_agent.search.parser import parse_query

_WORD = re.compile(r'[^\W\d_]{3,}')
# re.I's extra case pairs (query character c, text character x) whose word
# ab{c}cd is a lowercase letter run (snippet_query declines the others).
EXTRA_PAIRS = sorted(
    (c, x)
    for c, xs in snippets._EXTRA_CASES.items()  # pylint: disable=protected-access
    for x in xs
    if f'ab{c}cd'.isalnum() and f'ab{c}cd' == f'ab{c}cd'.lower()
)
_LONG = ' '.join(f'word{i} filler' for i in range(60))
HANDMADE = [
    Document(
        doc_id='h-lines',
        title='Lines',
        url='https://h.org/1',
        text=(
            'Heading without a stop\nThe film was shot in Paris.  \n'
            '  Indented line about the director\n\nLast line film'
        ),
    ),
    Document(
        doc_id='h-abbrev',
        title='Abbreviations',
        url='https://h.org/2',
        text=(
            'Dr. J. Smith directed the film in the U.S.A. in 1950. He was born'
            ' in St. Louis, Mo. and studied at the Univ. of Paris (Ph.D.). "Was'
            ' it good?" she asked. "Yes!" The film (a drama.) won. e.g. it won'
            ' twice. Vol. 3 no. 5 of the series... ended. Director Smith.'
        ),
    ),
    Document(
        doc_id='h-long',
        title='Long',
        url='https://h.org/3',
        text=(
            f'Opening film sentence. {_LONG} director film Paris end. Another'
            f' sentence about the film director. {_LONG}. Final film words.'
        ),
    ),
    Document(
        doc_id='h-case',
        title='Case',
        url='https://h.org/4',
        text=(
            'ΣΟΦΙΑ directed the FILM. Straße and İstanbul film director.'
            ' ΟΔΥΣΣΕΥΣ film.'
        ),
    ),
    Document(
        doc_id='h-dotless',
        title='Dotless',
        url='https://h.org/5',
        text=('The fılm director ſtudied film in Paris. Another film.'),
    ),
    Document(
        doc_id='h-extra',
        title='Extra cases',
        url='https://h.org/10',
        text=(
            'The ſtudio of Iſtanbul made a fılm. A µ-film on ϐιϐλίο, θέατρο'
            ' and ϑέατρο. Kelvin: 5\u212a. STUDIO OF ISTANBUL film director.'
        ),
    ),
    Document(
        doc_id='h-extra-all',
        title='Every extra case',
        url='https://h.org/11',
        text=' '.join(
            f'Filler {i} here. The word ab{x}cd stands {i}. More filler {i}.'
            for i, (_, x) in enumerate(EXTRA_PAIRS)
        ),
    ),
    Document(
        doc_id='h-astral',
        title='Astral',
        url='https://h.org/6',
        text=('A 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 film 😀 about a film director in Paris.'),
    ),
    Document(
        doc_id='h-numbers',
        title='Numbers',
        url='https://h.org/7',
        text=('Film² director Ⅻ film in Paris. The film-director won in 1950!'),
    ),
    Document(doc_id='h-empty', title='Empty', url='https://h.org/8', text=''),
    Document(
        doc_id='h-spaces',
        title='Spaces',
        url='https://h.org/9',
        text=('Film\u00a0director\u2003in\u3000Paris. Film\x1cdirector born.'),
    ),
]
HANDMADE_BY_ID = {d.doc_id: d for d in HANDMADE}
HANDMADE_QUERIES = [
    'film director Paris',
    'director',
    'smith film',
    'paris louis',
    'film',
    'studied director',
    'istanbul straße film',
    'sofia odysseus',
    'directed films',
    'ending series',
    'nothing matches zzzz',
    '"film director"',
    'film "in Paris"',
    '"the film" director',
    '"U.S.A. in 1950"',
    '"drama.) won"',
    '"film-director" won',
    '"word3 filler" "director film"',
    '"sentence. Another"',
    'studio istanbul film',
    '"studio of" Istanbul',
    'βιβλίο θέατρο μ',
    '"ϑέατρο and" 5k',
    'fılm ıstanbul',
]


@pytest.fixture(scope='module')
def corpus() -> list[Document]:
  return twowiki.read_2wiki()[:2000] + HANDMADE


@pytest.fixture(scope='module')
def engine(corpus, tmp_path_factory):
  root = tmp_path_factory.mktemp('lucene_snippets')
  with lucene_index.LuceneIndexWriter(root / 'lucene', IndexBuildConfig()) as w:
    w.add_all(corpus)
  e = lucene_engine(root / 'lucene')
  yield e
  e.close()


def queries(corpus: list[Document], n: int, seed: int = 0) -> list[str]:
  """n queries: 1-5 words of a document's title and text, lowercase or as
  written, a third with a quoted phrase of 2-3 words in a row from the
  text (punctuation between them kept), deterministic."""
  rng = random.Random(seed)
  out = []
  for _ in range(n):
    d = rng.choice(corpus)
    words = _WORD.findall(d.title + ' ' + d.text) or ['film']
    picked = rng.sample(words, min(len(words), rng.randint(1, 5)))
    text = ' '.join(picked)
    text = text.lower() if rng.random() < 0.5 else text
    row = d.text.split()
    if rng.random() < 1 / 3 and len(row) > 3:
      i = rng.randrange(len(row) - 3)
      text += (
          ' "' + ' '.join(row[i : i + rng.randint(2, 3)]).replace('"', '') + '"'
      )
    out.append(text)
  return out


def compare(engine, texts: list[str], config: snippets.SnippetConfig):
  """(identical, declined, differing) over each query's top-10 documents."""
  backend = engine.backend
  same = declined = 0
  differ = []
  for text in texts:
    q = parse_query(text)
    idf = engine.query_idf(q)
    query = snippets.snippet_query(q.terms, q.phrases, engine.analyzer, idf,
                                   config)  # fmt: skip
    assert query is not None, text
    ids = [d for d, _ in engine.fused_rankings([q], 10)[0][:10]]
    docs = backend.get_documents(ids)
    for doc, java in zip(docs, backend.snippets(ids, query)):
      python = snippets.make_snippet(doc.text, q.terms, q.phrases,
                                     engine.analyzer, idf, config, cache=None)  # fmt: skip
      if java is None:
        declined += 1
      elif java == python:
        same += 1
      else:
        differ.append((text, doc.doc_id, java, python))
  return same, declined, differ


@pytest.mark.parametrize(
    'config',
    [
        snippets.SnippetConfig(),
        snippets.SnippetConfig(window_words=24, max_words=12),
    ],
    ids=['seed', 'short'],
)
def test_java_snippets_equal_make_snippet_on_2wiki(engine, corpus, config):
  same, declined, differ = compare(engine, queries(corpus[:2000], 300), config)
  print(f'{same} identical, {declined} declined, {len(differ)} differ')
  assert not differ, differ[:3]
  assert same >= 2000
  assert declined <= 0.02 * (same + declined)


def test_java_snippets_equal_make_snippet_on_handmade_texts(engine):
  backend = engine.backend
  ids = [d.doc_id for d in HANDMADE]
  cut = {}
  for text in HANDMADE_QUERIES:
    q = parse_query(text)
    idf = engine.query_idf(q)
    for config in (snippets.SnippetConfig(),
                   snippets.SnippetConfig(window_words=8, max_words=5)):  # fmt: skip
      query = snippets.snippet_query(q.terms, q.phrases, engine.analyzer, idf,
                                     config)  # fmt: skip
      for doc, java in zip(HANDMADE, backend.snippets(ids, query)):
        python = snippets.make_snippet(doc.text, q.terms, q.phrases,
                                       engine.analyzer, idf, config, cache=None)  # fmt: skip
        if java is not None:
          assert java == python, (text, doc.doc_id, config)
        cut[doc.doc_id] = cut.get(doc.doc_id, 0) + (java is not None)
  # What Java declines: characters outside the BMP, a Σ or an İ (the
  # lowercase copy is not one to one). re.I's extra cases (ı, ſ, ϐ, ϑ, µ
  # for i, s, β, θ, μ and back) it matches as re.I does.
  assert cut['h-astral'] == 0
  assert cut['h-case'] == 0
  for doc_id in ('h-lines', 'h-abbrev', 'h-long', 'h-empty', 'h-spaces',
                 'h-dotless', 'h-extra'):  # fmt: skip
    assert cut[doc_id] == 2 * len(HANDMADE_QUERIES), doc_id


def test_java_matches_every_extra_case_as_re_i_does(engine):
  """For each of re.I's extra case pairs a quoted word and a term with the
  query's character, in a text holding the other: the same snippet, cut in
  Java unless the text holds an equivalent of the query's character that is
  not a letter (re.I matches it across a word break: Java declines)."""
  backend = engine.backend
  in_text = {x for _, x in EXTRA_PAIRS}
  across_words = {c for c, x in EXTRA_PAIRS if not x.isalnum()}
  found = 0
  for c, x in EXTRA_PAIRS:
    for text in (f'"ab{c}cd"', f'ab{c}cd filler'):
      q = parse_query(text)
      idf = engine.query_idf(q)
      query = snippets.snippet_query(q.terms, q.phrases, engine.analyzer, idf)
      assert query is not None, text
      (java,) = backend.snippets(['h-extra-all'], query)
      if c in across_words:
        assert java is None, (c, x)
        continue
      python = snippets.make_snippet(
          HANDMADE_BY_ID['h-extra-all'].text, q.terms, q.phrases,
          engine.analyzer, idf, cache=None,
      )  # fmt: skip
      assert java == python, (c, x, text)
      if text.startswith('"') and c not in in_text:  # found through x only
        assert f'ab{x}cd' in java, (c, x)
      found += text.startswith('"')
  assert found >= 50  # pairs Java cut


def test_the_engine_uses_java_snippets_and_python_where_declined(
    engine, corpus
):
  """The engine's hits equal those of the same backend with every snippet
  cut in Python, phrases included."""
  texts = queries(corpus[:2000], 60, seed=1) + [
      '"film director" Paris',
      'film director Paris',
      'Σοφία film',
  ]
  java = engine.search(texts, 10)
  backend = engine.backend
  backend._java_snippets = False  # pylint: disable=protected-access
  try:
    python = engine.search(texts, 10)
  finally:
    backend._java_snippets = True  # pylint: disable=protected-access
  assert java == python


def test_unknown_ids_are_left_to_the_caller(engine):
  q = parse_query('film director')
  query = snippets.snippet_query(q.terms, q.phrases, engine.analyzer,
                                 engine.query_idf(q))  # fmt: skip
  out = engine.backend.snippets(['no-such-doc', 'h-lines'], query)
  assert out[0] is None and out[1]


def test_snippet_query_is_none_where_only_python_cuts(engine):
  a = engine.analyzer
  idf = engine.query_idf(parse_query('film'))
  assert snippets.snippet_query(['film'], [], a, None) is None
  # A phrase's characters count too: s and i (re.I: ſ, ı), as pairs of
  # the text's character and the query's.
  assert snippets.snippet_query([], ['Sis'], a, idf).extra_cases == 'ıiſs'
  q = snippets.snippet_query(['film'], ['Film Director', '...'], a, idf)
  assert q.phrases == (('film', 'director'),)
  assert q.terms == ('director', 'film')
  q = snippets.snippet_query(['Films', 'directors', 'in'], [], a, idf)
  assert q.terms == ('director', 'film') and q.prefixes == ('directo', 'fil')
  assert q.extra_cases == '\u0131i'  # re.I: i also matches a dotless ı


def test_a_short_window_config_reaches_java(engine):
  """The window and budget cross the bridge: a 5-word budget gives 5
  words."""
  q = parse_query('film director')
  cfg = EngineConfig(
      snippet=snippets.SnippetConfig(window_words=8, max_words=5)
  )
  query = snippets.snippet_query(q.terms, q.phrases, engine.analyzer,
                                 engine.query_idf(q), cfg.snippet)  # fmt: skip
  (out,) = engine.backend.snippets(['h-long'], query)
  assert len(out.split()) <= 5
