"""Snippets and best windows equal outputs frozen from the original code.

`golden/snippets.json` holds the outputs of `make_snippet` and
`best_windows` as they were before the single-pass scoring and the
per-document cache (commit 01432b2), for seeded (query, document) cases
drawn from the bundled 2Wiki corpus: documents, 8-document concatenations
(some with sentence ends removed, so sentences exceed the budget, or with
line breaks), queries of the document's own words plus a word it lacks,
quoted phrases, corpus or document-local idf, three window/budget sizes,
and the same document under several queries (so a cache is exercised).
Regenerate only when the output is meant to change:
  PYTHONPATH=. .venv/bin/python tests/search/test_snippet_golden.py --write
"""

import json
import pathlib
import random
import sys
import zlib

import pytest

from search_agent.corpus import twowiki
from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer
from search_agent.search.analysis import raw_tokens

GOLDEN = pathlib.Path(__file__).parent / 'golden' / 'snippets.json'
A = QueryAnalyzer(stem=True, remove_stopwords=True)
CONFIGS = (
    snippets.SnippetConfig(),
    snippets.SnippetConfig(window_words=10, max_words=8),
    snippets.SnippetConfig(window_words=64, max_words=24),
)


def _idf(terms):
  """A corpus-like idf: varied, deterministic, 0 for some terms."""
  return {t: (zlib.crc32(t.encode()) % 1000) / 150 for t in terms}


def _text(docs, recipe) -> str:
  ids, strip, lines = recipe
  text = ' '.join(docs[i].text for i in ids)
  if strip:
    text = text.replace('. ', ' ', strip)
  if lines:
    text = text.replace('. ', '.\n', lines).replace(', ', ',\n\n', 1)
  return text


def _cases(docs) -> list[dict]:
  """Seeded cases; each names its text by a recipe over `docs`."""
  rng = random.Random(19)
  cases = []
  for n in range(240):
    if n % 3 == 0:
      recipe = (rng.sample(range(len(docs)), 8), rng.choice([0, 0, 12]),
                rng.choice([0, 0, 5]))  # fmt: skip
    else:
      recipe = ([rng.randrange(len(docs))], 0, rng.choice([0, 0, 0, 2]))
    toks = raw_tokens(_text(docs, recipe)) or ['x']
    other = raw_tokens(docs[rng.randrange(len(docs))].text) or ['y']
    for _ in range(3):  # one text, several queries
      terms = rng.sample(toks, min(len(toks), rng.randint(1, 5)))
      terms += rng.sample(other, 1)
      phrases = []
      if rng.random() < 0.35:
        i = rng.randrange(max(1, len(toks) - 3))
        phrases.append(' '.join(toks[i : i + rng.randint(2, 3)]))
      if rng.random() < 0.1:
        terms = ['zzzunmatched']
      cases.append(
          {
              'recipe': recipe,
              'terms': terms,
              'phrases': phrases,
              'idf': rng.random() < 0.7,
              'config': rng.choice([0, 0, 1, 2]),
              'goal': rng.random() < 0.3,
          }
      )
  return cases


def _outputs(docs, case) -> list:
  text = _text(docs, case['recipe'])
  idf = _idf if case['idf'] else None
  config = CONFIGS[case['config']]
  out = [
      snippets.make_snippet(
          text, case['terms'], case['phrases'], A, idf, config
      )
  ]
  if case['goal']:
    goal = ' '.join(case['terms'])
    goal += ''.join(f' "{p}"' for p in case['phrases'])
    wins = snippets.best_windows(text, goal, A, idf=idf, config=config)
    out.append([[w.start, w.end, w.text, list(w.score)] for w in wins])
  return out


@pytest.fixture(scope='module')
def docs():
  return twowiki.read_2wiki()


@pytest.mark.parametrize('path', ['fast, cached', 're.I, uncached'])
def test_outputs_equal_the_frozen_ones(docs, path, monkeypatch):
  snippets.DOCUMENT_CACHE.clear()  # each text is cut for 3 queries: hits
  if path == 're.I, uncached':  # matched as the original code did
    monkeypatch.setattr(snippets, '_lowercase_safe', lambda *_: False)
    monkeypatch.setattr(snippets.DOCUMENT_CACHE, 'max_docs', 0)
  golden = json.loads(GOLDEN.read_text())
  cases = _cases(docs)
  assert [c['terms'] for c in cases] == [g['terms'] for g in golden]
  got = [json.loads(json.dumps(_outputs(docs, c))) for c in cases]
  want = [g['out'] for g in golden]
  diff = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
  assert not diff, (len(diff), diff[:5], got[diff[0]], want[diff[0]])
  # The cases are varied: distinct snippets, phrases, windows, leads.
  assert len({g[0] for g in got}) > len(cases) * 0.8
  assert sum(len(g) == 2 for g in got) > 100
  cache = snippets.DOCUMENT_CACHE
  assert (cache.hits > 400) == (path == 'fast, cached'), cache.hits


def _write():
  docs = twowiki.read_2wiki()
  rows = [{**c, 'out': _outputs(docs, c)} for c in _cases(docs)]
  GOLDEN.parent.mkdir(exist_ok=True)
  GOLDEN.write_text(json.dumps(rows, indent=0, ensure_ascii=False) + '\n')
  print(f'{len(rows)} cases -> {GOLDEN}')


if __name__ == '__main__':
  if sys.argv[1:] != ['--write']:
    sys.exit(__doc__)
  _write()
