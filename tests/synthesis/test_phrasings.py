"""Several question phrasings per relation, each a well-formed question."""

import collections
import re

import pytest

from search_agent.synthesis import entities
from search_agent.synthesis import phrasings
from search_agent.synthesis import templates
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Path
from search_agent.synthesis.schema import RELATIONS

# How the questions may open: a wh-word, a preposition before one, or "Do
# you know".
_OPENING = re.compile(
    r'^(When|Where|Who|Whom|What|Which|In which|In what|On what|Of what'
    r'|By whom|Do you know) '
)


def test_every_relation_has_at_least_three_distinct_frames():
  assert set(phrasings.FRAMES) == set(RELATIONS)
  for relation, frames in phrasings.FRAMES.items():
    assert len(frames) >= 3, relation
    assert len(set(frames)) == len(frames), relation
    for f in frames:
      assert f.count('{x}') == 1 and f.endswith('?'), f
      assert "{x}'s" not in f  # a nested description takes no possessive


def test_ids_name_their_frames_and_unknown_ids_raise():
  ids = phrasings.ids()
  assert ids['director'][2] == 'director/2'
  assert phrasings.frame('director/2') == phrasings.FRAMES['director'][2]
  for bad in ('director/9', 'director', 'height/0', 'director/x'):
    with pytest.raises(phrasings.PhrasingError):
      phrasings.frame(bad)


def _paths_by_relation(prepared):
  """One bundled path per last relation: a one-hop one and a nested one."""
  out = collections.defaultdict(dict)
  for g in prepared.graphs:
    for p in g.paths:
      out[p.claims[-1].relation].setdefault(min(p.hops, 2), p)
  return out


def _well_formed(q: str, name: str) -> None:
  assert _OPENING.match(q), q
  assert q.endswith('?') and q.count('?') == 1, q
  assert '{' not in q and '}' not in q and '  ' not in q, q
  assert name in q, (name, q)
  words = q.lower().split()
  assert all(a != b for a, b in zip(words, words[1:])), q  # no "the the"


def test_every_frame_renders_a_question_on_bundled_paths(prepared):
  paths = _paths_by_relation(prepared)
  # The bundled corpus's pattern claims hold no author path.
  assert set(RELATIONS) - set(paths) == {'author'}
  for relation, by_hops in paths.items():
    for path in by_hops.values():
      start = prepared.docs[path.start]
      kind = prepared.types[path.start]
      name = entities.display_name(start.title)
      for pid in phrasings.ids()[relation]:
        q = templates.question(path, start.title, kind, pid)
        _well_formed(q, name)
        if path.hops > 1:  # the nested description sits where {x} was
          assert 'the ' + path.claims[0].relation in q.lower(), q


def test_author_frames_render_on_a_work():
  claim = PageClaim(
      subject='Emma (novel)', relation='author', object='Jane Austen',
      passage='', extractor='t',
  )  # fmt: skip
  path = Path(claims=(claim,))
  for pid in phrasings.ids()['author']:
    q = templates.question(path, 'Emma (novel)', 'work', pid)
    _well_formed(q, 'the work Emma')


def test_choose_is_deterministic_and_uses_every_allowed_frame(prepared):
  held = frozenset({'director/0', 'date_of_birth/4'})
  counts = collections.Counter()
  for g in prepared.graphs:
    for p in g.paths:
      relation, key = p.claims[-1].relation, phrasings.path_key(p)
      pid = phrasings.choose(relation, key, held)
      assert pid == phrasings.choose(relation, key, held)
      assert pid.startswith(relation + '/') and pid not in held
      counts[pid] += 1
  for relation, ids in phrasings.ids().items():
    used = [counts[i] for i in ids if i not in held]
    if sum(used) >= 20 * len(ids):  # enough paths to expect each frame
      assert min(used) > 0, (relation, used)
  with pytest.raises(phrasings.PhrasingError, match='no question frame'):
    phrasings.choose('father', 'k', phrasings.ids()['father'])
