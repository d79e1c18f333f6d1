"""The question frames of the template generator: several per relation.

A frame asks for a path's last relation about a noun phrase `{x}` (a named
start, or a nested description such as "the director of the film X"). Each
frame has a phrasing id, '<relation>/<k>'; frame 0 is the one template of
earlier runs. A path's frame is chosen by a hash of its pages and relations
among the frames allowed, so a run is deterministic and each relation's
frames are used about equally often. Some phrasings can be held out of
training entirely: the generator never picks them, and the held-out tasks
are asked again in them for evaluation (synthesis/split.py,
docs/phrasings.md). No frame puts a possessive after `{x}`: a nested
description would read "the father of the film X's director".
"""

import hashlib
from typing import Collection, Mapping

from search_agent.synthesis.schema import Path

FRAMES: Mapping[str, tuple[str, ...]] = {
    'date_of_birth': (
        'When was {x} born?',
        'What is the date of birth of {x}?',
        'On what date was {x} born?',
        'What was the birth date of {x}?',
        'Do you know when {x} was born?',
    ),
    'date_of_death': (
        'When did {x} die?',
        'What is the date of death of {x}?',
        'On what date did {x} die?',
        'When did {x} pass away?',
        'Do you know when {x} died?',
    ),
    'place_of_birth': (
        'Where was {x} born?',
        'What is the place of birth of {x}?',
        'In which place was {x} born?',
        'What was the birthplace of {x}?',
        'Do you know where {x} was born?',
    ),
    'place_of_death': (
        'Where did {x} die?',
        'What is the place of death of {x}?',
        'In which place did {x} die?',
        'Where did {x} pass away?',
        'Do you know where {x} died?',
    ),
    'nationality': (
        'What nationality was {x}?',
        'What was the nationality of {x}?',
        'Of what nationality was {x}?',
        'Which nationality did {x} have?',
        'Do you know the nationality of {x}?',
    ),
    'release_year': (
        'In which year was {x} released?',
        'When was {x} released?',
        'What year did {x} come out?',
        'What is the release year of {x}?',
        'Do you know the year {x} was released?',
    ),
    'director': (
        'Who directed {x}?',
        'Who was the director of {x}?',
        'By whom was {x} directed?',
        'Which filmmaker directed {x}?',
        'Do you know who directed {x}?',
    ),
    'producer': (
        'Who produced {x}?',
        'Who was the producer of {x}?',
        'By whom was {x} produced?',
        'Who is credited as the producer of {x}?',
        'Do you know who produced {x}?',
    ),
    'screenwriter': (
        'Who wrote the screenplay of {x}?',
        'Who was the screenwriter of {x}?',
        'Who wrote the script for {x}?',
        'By whom was the screenplay of {x} written?',
        'Do you know who wrote the screenplay of {x}?',
    ),
    'composer': (
        'Who composed the music of {x}?',
        'Who was the composer of {x}?',
        'Who wrote the music for {x}?',
        'By whom was the music of {x} composed?',
        'Do you know who composed the music of {x}?',
    ),
    'performer': (
        'Who performed {x}?',
        'Who was the performer of {x}?',
        'Which artist performed {x}?',
        'By whom was {x} performed?',
        'Do you know who performed {x}?',
    ),
    'author': (
        'Who wrote {x}?',
        'Who was the author of {x}?',
        'By whom was {x} written?',
        'Who is the writer of {x}?',
        'Do you know who wrote {x}?',
    ),
    'father': (
        'Who was the father of {x}?',
        'What was the name of the father of {x}?',
        'Who is the father of {x}?',
        'Do you know who the father of {x} was?',
    ),
    'mother': (
        'Who was the mother of {x}?',
        'What was the name of the mother of {x}?',
        'Who is the mother of {x}?',
        'Do you know who the mother of {x} was?',
    ),
    'spouse': (
        'Who was the spouse of {x}?',
        'Who was {x} married to?',
        'Whom did {x} marry?',
        'What was the name of the spouse of {x}?',
        'Do you know who {x} married?',
    ),
}


class PhrasingError(ValueError):
  """A phrasing id or relation the frames do not hold."""


def phrasing_id(relation: str, k: int) -> str:
  return f'{relation}/{k}'


def ids() -> dict[str, tuple[str, ...]]:
  """Relation → its phrasing ids, in frame order."""
  return {
      r: tuple(phrasing_id(r, k) for k in range(len(frames)))
      for r, frames in FRAMES.items()
  }


def frame(phrasing: str) -> str:
  """The frame of a phrasing id ('director/2' -> 'By whom was {x} ...')."""
  relation, _, k = phrasing.rpartition('/')
  frames = FRAMES.get(relation)
  if frames is None or not k.isdigit() or int(k) >= len(frames):
    raise PhrasingError(
        f'no phrasing {phrasing!r}; relations with frames: {sorted(FRAMES)}'
    )
  return frames[int(k)]


def path_key(path: Path) -> str:
  """What a path's phrasing is chosen by: its pages and relations."""
  return '|'.join(path.pages) + '#' + '/'.join(c.relation for c in path.claims)


def choose(relation: str, key: str, excluded: Collection[str] = ()) -> str:
  """One phrasing id of `relation` not in `excluded`, by a hash of `key`.

  Raises:
    PhrasingError: The relation has no frames, or every one is excluded.
  """
  allowed = [i for i in ids().get(relation, ()) if i not in excluded]
  if not allowed:
    raise PhrasingError(
        f'relation {relation!r} has no question frame outside'
        f' {sorted(excluded)}; relations with frames: {sorted(FRAMES)}'
    )
  digest = hashlib.sha1(key.encode('utf-8')).digest()
  return allowed[int.from_bytes(digest[:8], 'big') % len(allowed)]
