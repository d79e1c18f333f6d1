"""Snippets on the bundled 2Wiki corpus: how many start mid-sentence (issue 10 item 7).

Run: .venv/bin/python tests/bench/measure_snippet_starts.py

Queries: for 1,000 seeded-random documents, 3 random words of 5+ letters from
the document. A snippet starts mid-sentence when it does not begin the
document and the text before it does not end in [.!?]["')]* (i.e. the
segmenter cut a sentence) -- judged against a reference that treats
abbreviations/initials as non-ends: the previous word must not be a single
letter + '.', contain an inner '.', or be a known abbreviation, and the
snippet's first char must not be lowercase.
"""

import random
import re
import sys

sys.path.insert(0, '.')
from search_agent.corpus import twowiki
from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer

A = QueryAnalyzer(stem=True, remove_stopwords=True)
docs = twowiki.read_2wiki()
rng = random.Random(0)
n = bad = 0
examples = []
for d in rng.sample(docs, 1000):
  words = [w for w in re.findall(r'[A-Za-z]{5,}', d.text)]
  if len(words) < 3:
    continue
  q = rng.sample(words, 3)
  s = snippets.make_snippet(d.text, [w.lower() for w in q], [], A)
  n += 1
  head = ' '.join(s.split()[:3])
  norm = ' '.join(d.text.split())
  i = norm.find(' '.join(s.split()))
  if i <= 0:
    continue
  prev = norm[:i].split()[-1] if norm[:i].split() else ''
  mid = s[:1].islower() or re.fullmatch(
      r'[("\']?([A-Za-z]\.|\S*\.\S+\.|(c|ca|b|d|fl|lit|ibid|mr|mrs|dr|st|jr|no|vol)\.)',
      prev,
      re.I,
  )
  if mid:
    bad += 1
    if len(examples) < 5:
      examples.append((prev, head))
print(f'snippets {n}, starting mid-sentence {bad} ({bad/n:.1%})')
print(examples)
