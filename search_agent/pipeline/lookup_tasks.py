r"""TEMPORARY task source: one-hop lookup tasks read off the bundled corpus.

  python -m search_agent.pipeline.lookup_tasks --workdir=DIR \
      [--heldout=200] [--max_train=0] [--seed=0]

A stand-in for `synthesis.run` (issue 13) until it lands, with the same
outputs: DIR/tasks.train.jsonl, DIR/tasks.heldout.jsonl (Task format,
`meta.evidence_path` = the page read) and DIR/funnel.json. A fact stated
in the first sentence of a 2Wiki paragraph (a film's director or year, a
person's birth or death year, a nationality) becomes a question about the
page's title; held-out tasks are about pages no train task uses, so the two
splits share no evidence page. The manifest says it is temporary.
"""

import collections
import json
import os
import random
import re

from absl import app
from absl import flags

from search_agent.agent import task as task_lib
from search_agent.corpus import twowiki

SOURCE = 'temporary lookup tasks (search_agent.pipeline.lookup_tasks)'
_NATIONALITY = (
    'American|British|English|French|German|Italian|Canadian|Australian|'
    'Indian|Japanese|Spanish|Swedish|Dutch|Russian|Polish|Mexican|Irish|'
    'Scottish|Norwegian|Danish|Brazilian|Austrian|Belgian|Swiss|Finnish|'
    'Greek|Hungarian|Czech|Chinese|Turkish|Portuguese|Soviet|Welsh'
)
_FILM = re.compile(r'\bis an? (\d{4}) [^.]*?\bfilm\b')
_DIRECTOR = re.compile(
    r'\bfilm\b[^.]*?\bdirected by ((?:[A-Z][\w\'\-]*\.? ?){1,4})'
)
_BORN = re.compile(r'^[^(]{0,80}\(([^)]{0,80})\)')
_NAT = re.compile(r'\)\s*(?:is|was) an? (' + _NATIONALITY + r')\b')
QUESTIONS = {
    'director': ('Who directed the film {e}?', 'Who is the director of {e}?'),
    'film_year': ('In which year was the film {e} released?',),
    'born': ('In which year was {e} born?', 'When was {e} born?'),
    'died': ('In which year did {e} die?',),
    'nationality': ('What is the nationality of {e}?',),
}

_HELDOUT = flags.DEFINE_integer('heldout', 200, 'Held-out tasks (at most).')
_MAX_TRAIN = flags.DEFINE_integer('max_train', 0, 'Train tasks; 0 = all.')
_SEED = flags.DEFINE_integer('seed', 0, 'Shuffle seed.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def facts(title: str, text: str) -> list[tuple[str, str]]:
  """(kind, answer) pairs the paragraph states about its own title."""
  head = text[:300]
  out = []
  film = _FILM.search(head)
  if film:
    out.append(('film_year', film.group(1)))
    director = _DIRECTOR.search(head)
    if director:
      out.append(('director', director.group(1).strip().rstrip('.')))
    return out
  paren = _BORN.match(text)
  if paren:
    born = re.search(r'\bborn\b[^;]*?\b(\d{4})\b', paren.group(1))
    died = re.search(r'\b(?:died|d\.)\s[^;]*?\b(\d{4})\b', paren.group(1))
    out += [('born', born.group(1))] if born else []
    out += [('died', died.group(1))] if died else []
    nat = _NAT.search(text[:250])
    out += [('nationality', nat.group(1))] if nat else []
  del title
  return out


def make_tasks(docs, heldout: int, max_train: int, seed: int):
  """(train, heldout, funnel): tasks split by evidence page."""
  rng = random.Random(seed)
  pages = []
  for doc in docs:
    entity = re.sub(r'\s*\([^)]*\)\s*$', '', doc.title).strip()
    if entity and len(entity) <= 60 and doc.text.startswith(entity[:4]):
      found = facts(doc.title, doc.text)
      if found:
        pages.append((doc.title, entity, found))
  rng.shuffle(pages)
  funnel = collections.Counter(documents=len(docs), pages_with_facts=len(pages))
  train, held = [], []
  for title, entity, found in pages:
    split = held if len(held) < heldout else train
    for kind, answer in found:
      question = rng.choice(QUESTIONS[kind]).format(e=entity)
      split.append(
          task_lib.Task(
              id=f'lk-{funnel["tasks"]:05d}',
              question=question,
              answer=answer,
              evidence=(title,),
              claims=(
                  task_lib.Claim(
                      subject=entity, relation=kind, object=answer, source=title
                  ),
              ),
              meta={
                  'kind': kind,
                  'evidence_path': [title],
                  'source': SOURCE,
              },
          )
      )
      funnel['tasks'] += 1
  held = held[:heldout]
  train = train[:max_train] if max_train else train
  funnel.update(train=len(train), heldout=len(held))
  return train, held, dict(funnel)


def write(workdir: str, train, held, funnel) -> None:
  os.makedirs(workdir, exist_ok=True)
  for name, tasks in (('train', train), ('heldout', held)):
    with open(os.path.join(workdir, f'tasks.{name}.jsonl'), 'w') as f:
      for t in tasks:
        f.write(json.dumps(t.to_json(), ensure_ascii=False) + '\n')
  kinds = collections.Counter(t.meta['kind'] for t in train + held)
  funnel = {**funnel, 'kinds': dict(kinds), 'source': SOURCE, 'temporary': True}
  with open(os.path.join(workdir, 'funnel.json'), 'w') as f:
    json.dump(funnel, f, indent=1)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  docs = twowiki.read_2wiki()
  train, held, funnel = make_tasks(
      docs, _HELDOUT.value, _MAX_TRAIN.value, _SEED.value
  )
  write(_WORKDIR.value, train, held, funnel)
  print(f'tasks: {len(train)} train, {len(held)} held-out ({SOURCE})')


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
