"""Temporal plausibility of entity claims (catches wrong title resolution).

A name in a passage can resolve to another page of the same name ("James
Stuart" the 18th-century earl's father → a rugby player born 1988). With
the years known from the claims (birth, death, release), an entity claim
is implausible when
  father/mother   the parent was born less than 12 years before the child,
                  or after the child died;
  spouse          one was born after the other died;
  film credits    the person was born less than 5 years before the film.
"""

import re

from search_agent.synthesis.schema import PageClaim

_CREDITS = ('director', 'producer', 'screenwriter', 'composer')
_YEAR = re.compile(r'(\d{3,4})$')


def years(claims: dict[str, list[PageClaim]]) -> dict[str, dict[str, int]]:
  """doc_id → {'birth'|'death'|'release': year} from its value claims."""
  keys = {'date_of_birth': 'birth', 'date_of_death': 'death',
          'release_year': 'release'}  # fmt: skip
  out: dict[str, dict[str, int]] = {}
  for doc_id, cs in claims.items():
    for c in cs:
      m = _YEAR.search(c.object)
      if c.relation in keys and m:
        out.setdefault(doc_id, {})[keys[c.relation]] = int(m.group(1))
  return out


def plausible(c: PageClaim, known: dict[str, dict[str, int]]) -> bool:
  """False when the claim contradicts the known years."""
  if not c.object_doc:
    return True
  s, o = known.get(c.subject, {}), known.get(c.object_doc, {})
  if c.relation in ('father', 'mother'):
    if 'birth' in o and 'birth' in s and o['birth'] > s['birth'] - 12:
      return False
    if 'birth' in o and 'death' in s and o['birth'] >= s['death']:
      return False
  if c.relation == 'spouse':
    if 'birth' in o and 'death' in s and o['birth'] > s['death']:
      return False
    if 'birth' in s and 'death' in o and s['birth'] > o['death']:
      return False
  if c.relation in _CREDITS:
    if 'birth' in o and 'release' in s and o['birth'] > s['release'] - 5:
      return False
  return True


def drop_implausible(
    claims: dict[str, list[PageClaim]],
) -> dict[str, list[PageClaim]]:
  known = years(claims)
  return {d: [c for c in cs if plausible(c, known)] for d, cs in claims.items()}
