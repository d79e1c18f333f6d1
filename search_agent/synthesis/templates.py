"""Template questions over 1–3 hop paths (the :tiny generator, no LLM).

A path start --r1--> m1 --r2--> ... --rn--> answer becomes a nested noun
phrase read from the start outwards ("the father of the director of the
film X") and a question frame for the last relation ("When was ... born?"),
one of several phrasings of it (synthesis/phrasings.py). The start is named
by its title without disambiguation, with its type ("the film", "the song")
when it is not a person.
"""

import re
from typing import Sequence

from search_agent.synthesis import entities
from search_agent.synthesis import phrasings
from search_agent.synthesis.schema import Path

_NOUN = {
    'director': 'the director of {x}',
    'producer': 'the producer of {x}',
    'screenwriter': 'the screenwriter of {x}',
    'composer': 'the composer of {x}',
    'performer': 'the performer of {x}',
    'author': 'the author of {x}',
    'father': 'the father of {x}',
    'mother': 'the mother of {x}',
    'spouse': 'the spouse of {x}',
}
_TYPE_PREFIX = {
    'film': 'the film ',
    'music': 'the recording ',
    'work': 'the work ',
    'place': '',
    'organization': '',
    'person': '',
    'other': '',
}
_DMY = re.compile(r'^(\d{1,2}) (\w+) (\d{3,4})$')
_MDY = re.compile(r'^(\w+) (\d{1,2}), (\d{3,4})$')


def start_phrase(title: str, kind: str) -> str:
  return _TYPE_PREFIX.get(kind, '') + entities.display_name(title)


def question(
    path: Path, start_title: str, start_kind: str, phrasing: str
) -> str:
  """The template question of `path` (start named, others described), its
  last relation asked in the frame of phrasing id `phrasing`."""
  return question_of(
      start_phrase(start_title, start_kind),
      [c.relation for c in path.claims],
      phrasing,
  )


def question_of(start: str, relations: Sequence[str], phrasing: str) -> str:
  """The question walking `relations` from the start phrase `start`, the
  last one asked in the frame of `phrasing` (a task asked again)."""
  x = start
  for relation in relations[:-1]:
    x = _NOUN[relation].format(x=x)
  text = phrasings.frame(phrasing).format(x=x)
  return text[0].upper() + text[1:]


def answer_forms(answer: str, answer_title: str | None) -> tuple[str, ...]:
  """Other accepted forms: both date orders; the answer page's title."""
  forms = []
  m = _DMY.match(answer)
  if m:
    forms.append(f'{m.group(2)} {m.group(1)}, {m.group(3)}')
  m = _MDY.match(answer)
  if m:
    forms.append(f'{m.group(2)} {m.group(1)} {m.group(3)}')
  words = answer.split()
  if len(words) > 1 and words[0] in entities.HONORIFICS:
    forms.append(' '.join(words[1:]))
  if answer_title:
    for t in (answer_title, entities.display_name(answer_title)):
      if t != answer:
        forms.append(t)
  return tuple(dict.fromkeys(forms))
