"""Programmatic claim extraction from sentence patterns (the :tiny extractor).

2Wiki paragraphs are Wikipedia lead sections with regular phrasing: a
parenthesis after the name with birth/death dates (and places), "is a
1948 American drama film directed by ...", "was the son of A and B",
"married ...". Each rule yields `PageClaim`s with the sentence as the
supporting passage and, when the object's name is a page title, its
doc_id. Rules are conservative: a name must be a run of capitalised words
(with particles such as "of", "de", "von"), and a span listing several
names yields one claim per name (the path stage keeps only relations with
a single object per subject).
"""

import re
from typing import Callable, Iterable

from search_agent.corpus.record import Document
from search_agent.synthesis import consistency
from search_agent.synthesis import entities
from search_agent.synthesis.schema import ENTITY_RELATIONS
from search_agent.synthesis.schema import PageClaim

_MONTHS = (
    'January February March April May June July August September October'
    ' November December'
).split()
_MONTH = '(?:' + '|'.join(_MONTHS) + ')'
DATE = (
    rf'(?:\d{{1,2}} {_MONTH} \d{{3,4}}|{_MONTH} \d{{1,2}}, \d{{3,4}}'
    rf'|(?<![\d,])\d{{3,4}}(?!\d))'
)
_PARTICLE = r'(?:of|de|da|di|del|della|van|von|der|den|du|la|le|y|bin|al)'
_WORD = r"[A-Z][\w'’\-]*\.?"
_ORDINAL_TITLE = rf', \d+(?:st|nd|rd|th) {_WORD}(?: (?:{_PARTICLE} )*{_WORD})*'
# A run of capitalised words (with particles), optionally with a peerage
# suffix: "James Stuart, 1st Earl of Bute".
NAME = rf'{_WORD}(?: (?:{_PARTICLE} )*{_WORD})*(?:{_ORDINAL_TITLE})?'
_PLACE_WORDS = r"[A-Z][\w'’\-\.]*(?: (?:{p} )*[A-Z][\w'’\-\.]*)*"
_PLACE = _PLACE_WORDS + r'(?:, ' + _PLACE_WORDS + r')*'
_PLACE = _PLACE.replace('{p}', _PARTICLE)

_SENTENCE_END = re.compile(r'(?<![A-Z])(?<!\b[A-Z][a-z])\.\s+(?=[A-Z"])')
_PAREN = re.compile(r'\(([^()]{4,200})\)')
_LIFE = re.compile(
    rf'(?:(?P<born>born)\s+|(?P<died>died)\s+)?(?P<d1>{DATE})'
    rf'(?:(?:,| in) (?P<p1>{_PLACE}))?'
    rf'(?:\s*[–\-]\s*(?P<d2>{DATE})(?:(?:,| in) (?P<p2>{_PLACE}))?)?\s*$'
)
_FILM = re.compile(
    rf'\b(?:is|was) an? (?P<year>\d{{4}}) (?:[\w\-]+ ){{0,4}}?film\b'
)
_CREDIT = {
    'director': re.compile(rf'\bdirected by (?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
    'producer': re.compile(rf'\bproduced by (?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
    'screenwriter': re.compile(rf'\b(?:written|scripted) by (?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
    'composer': re.compile(rf'\b(?:music (?:is )?by|composed by|score by) (?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
    'performer': re.compile(rf'\b(?:song|single|album) (?:\w+ )?(?:by|recorded by|performed by) (?:\w+ )?(?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
    'author': re.compile(rf'\b(?:novel|book|play|poem) (?:\w+ )?(?:written )?by (?:\w+ )?(?P<names>{NAME}(?:(?:,| and|, and) {NAME})*)'),
}  # fmt: skip
_PARENTS = re.compile(
    rf'\b(?:was|is) (?:the |an? )?(?:\w+ )?(?:son|daughter|child)'
    rf' of (?P<a>{NAME})(?:,? and (?:his wife |her husband )?(?P<b>{NAME}))?'
)
_NAMED_PARENT = re.compile(
    rf'\b(?:His|Her|Their) (?P<rel>father|mother)(?:,| was| is)? (?P<name>{NAME})'
)
_SPOUSE = re.compile(
    rf'\b(?:married (?:to )?|(?:wife|husband|widow|consort) of |'
    rf'(?:His|Her) (?:wife|husband),? (?:was )?)(?P<name>{NAME})'
)
_BORN_IN = re.compile(rf'\b[Bb]orn in (?P<place>{_PLACE})')


# Which credit relations are read from pages of each entity type.
_CREDITS_BY_TYPE = {
    'film': ('director', 'producer', 'screenwriter', 'composer'),
    'music': ('performer', 'composer', 'producer'),
    'work': ('author',),
}


def sentences(text: str) -> list[str]:
  """Splits a paragraph at '. ' before a capital (not after an initial)."""
  return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _clean_name(name: str) -> str:
  name = name.strip()
  if name.endswith('.') and not re.search(r'\b[A-Z]\.$', name):
    name = name[:-1]
  return name


def _split_names(names: str) -> list[str]:
  parts = re.split(r',? and |, (?!\d+(?:st|nd|rd|th) )', names)
  return [_clean_name(p) for p in parts if p.strip()]


class Extractor:
  """Extracts pattern claims; resolves object names to pages.

  Args:
    docs: The corpus (for title → doc_id resolution and pronoun gender).
    title_index: mention key (tokens of the title without its
      parenthesised disambiguation) → doc_id, for unambiguous titles only.
  """

  def __init__(self, docs: dict[str, Document], title_index: dict[tuple, str]):
    self._docs = docs
    self._titles = title_index

  def resolve(self, name: str) -> str | None:
    """doc_id of the page titled `name` (honorific prefixes dropped)."""
    words = name.split()
    while words:
      key = tuple(re.findall(r'\w+', ' '.join(words)))
      if key in self._titles:
        return self._titles[key]
      if words[0] not in entities.HONORIFICS:
        return None
      words = words[1:]
    return None

  def extract(self, doc: Document) -> list[PageClaim]:
    """All pattern claims of one page, in text order, deduplicated."""
    sents = sentences(doc.text)
    if not sents:
      return []
    out: list[PageClaim] = []
    add = self._adder(doc, out)
    kind = entities.entity_type(doc)
    if kind == 'person':
      self._life(doc, sents[0], add)
      self._nationality(sents[0], add)
    film = _FILM.search(sents[0])
    if film and kind == 'film':
      add('release_year', film.group('year'), sents[0], 'film_year')
    credits = _CREDITS_BY_TYPE.get(kind, ())
    for i, s in enumerate(sents):
      about_subject = i == 0 or s.split(' ', 1)[0] in (
          'He', 'She', 'His', 'Her', 'It', 'The',
      )  # fmt: skip
      if not about_subject:
        continue
      for rel in credits:
        for m in _CREDIT[rel].finditer(s):
          for name in _split_names(m.group('names')):
            add(rel, name, s, rel)
      if kind != 'person':
        continue
      self._parents(s, add)
      for m in _SPOUSE.finditer(s):
        add('spouse', _clean_name(m.group('name')), s, 'spouse')
      for m in _BORN_IN.finditer(s):
        add('place_of_birth', m.group('place').strip(), s, 'born_in')
    return out

  def _adder(self, doc: Document, out: list[PageClaim]) -> Callable:
    seen = set()

    def add(relation, obj, passage, rule, resolve=True):
      obj = obj.strip(' ,;')
      if not obj or obj == doc.title:
        return
      if relation in ENTITY_RELATIONS and entities.is_demonym(obj.split()[0]):
        return
      key = (relation, obj)
      if key in seen:
        return
      seen.add(key)
      obj_doc = self.resolve(obj) if resolve else None
      if obj_doc == doc.doc_id:
        return
      out.append(
          PageClaim(
              subject=doc.doc_id,
              relation=relation,
              object=obj,
              object_doc=obj_doc,
              passage=passage,
              extractor=f'pattern:{rule}',
          )
      )

    return add

  def _life(self, doc: Document, first: str, add) -> None:
    m = _PAREN.search(first[: len(doc.title) + 120])
    if not m:
      return
    for segment in reversed(m.group(1).split(';')):
      life = _LIFE.match(segment.strip())
      if life:
        break
    else:
      return
    death_only = life.group('died') and not life.group('d2')
    rel1 = 'date_of_death' if death_only else 'date_of_birth'
    add(rel1, life.group('d1'), first, 'life_dates', resolve=False)
    if life.group('p1') and not death_only:
      add('place_of_birth', life.group('p1'), first, 'life_places')
    if life.group('d2'):
      add('date_of_death', life.group('d2'), first, 'life_dates', False)
      if life.group('p2'):
        add('place_of_death', life.group('p2'), first, 'life_places')

  def _nationality(self, first: str, add) -> None:
    demonym = entities.nationality(first)
    if demonym:
      add('nationality', demonym, first, 'nationality', resolve=False)

  def _parents(self, s: str, add) -> None:
    for m in _PARENTS.finditer(s):
      a, b = m.group('a'), m.group('b')
      names = [_clean_name(a)] + ([_clean_name(b)] if b else [])
      for pos, name in enumerate(names):
        gender = self._gender(name)
        if gender is None and len(names) == 2:
          gender = 'm' if pos == 0 else 'f'
        if gender:
          add('father' if gender == 'm' else 'mother', name, s, 'child_of')
    for m in _NAMED_PARENT.finditer(s):
      add(m.group('rel'), _clean_name(m.group('name')), s, 'named_parent')

  def _gender(self, name: str) -> str | None:
    doc_id = self.resolve(name)
    if doc_id is None:
      return None
    return entities.pronoun_gender(self._docs[doc_id].text)


def extract_all(
    docs: Iterable[Document], title_index: dict[tuple, str]
) -> dict[str, list[PageClaim]]:
  """doc_id → its pattern claims, for every document.

  Entity claims whose object page is temporally impossible for the
  relation (`consistency.plausible`) are dropped: they name another
  person of the same name.
  """
  docs = list(docs)
  extractor = Extractor({d.doc_id: d for d in docs}, title_index)
  claims = {d.doc_id: extractor.extract(d) for d in docs}
  return consistency.drop_implausible(claims)
