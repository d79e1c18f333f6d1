"""Entity types, nationality and pronoun gender of corpus pages.

Types are assigned from the page's own lead sentence (no LLM): 'person'
(life dates in the lead parenthesis or he/she pronouns), 'film', 'music'
(song, single, album), 'work' (novel, book, play, poem, series),
'place' (city, town, village, river, ...), 'organization' (company, club,
school, ...), else 'other'. Seeds are sampled across these types.
"""

import re

from search_agent.corpus import links
from search_agent.corpus.record import Document

TYPES = ('person', 'film', 'music', 'work', 'place', 'organization', 'other')

_DEMONYMS = (
    'American British English Scottish Welsh Irish French German Italian'
    ' Spanish Portuguese Dutch Belgian Swiss Austrian Swedish Norwegian'
    ' Danish Finnish Icelandic Polish Czech Slovak Hungarian Romanian'
    ' Bulgarian Greek Turkish Russian Ukrainian Belarusian Serbian Croatian'
    ' Slovenian Bosnian Albanian Lithuanian Latvian Estonian Georgian'
    ' Armenian Israeli Iranian Iraqi Egyptian Moroccan Algerian Tunisian'
    ' Nigerian Ghanaian Kenyan Ethiopian South_African Canadian Mexican'
    ' Brazilian Argentine Argentinian Chilean Colombian Peruvian Venezuelan'
    ' Cuban Uruguayan Australian New_Zealand Indian Pakistani Bangladeshi'
    ' Sri_Lankan Nepalese Chinese Japanese Korean South_Korean Vietnamese'
    ' Thai Filipino Indonesian Malaysian Singaporean Saudi_Arabian Lebanese'
    ' Syrian Jordanian Soviet Yugoslav Prussian Bavarian Norman Flemish'
).split()
_DEMONYM_RE = re.compile(
    r'\b(?:is|was) (?:an?|the) (?:[a-z\-]+ ){0,3}?('
    + '|'.join(d.replace('_', ' ') for d in _DEMONYMS)
    + r')(?![\w\-])(?! ?- ?born)'
)
_LIFE_PAREN = re.compile(
    r'\(\s*(?:(?:born|died|c\.)[^()]*\d{3,4}|[^()]*\d{3,4}[^()]*\s[–\-]\s*[^()]*'
    r'\d{3,4})'
)
_TYPE_WORDS = (
    ('film', r'\b(?:film|movie|documentary)\b'),
    ('music', r'\b(?:song|single|album|EP|opera)\b'),
    ('work', r'\b(?:novel|book|play|poem|series|magazine|newspaper|game)\b'),
    ('place', r'\b(?:city|town|village|river|lake|mountain|island|county|'
              r'district|municipality|commune|region|province|castle|'
              r'church|cathedral|building|street|station|park)\b'),
    ('organization', r'\b(?:company|club|school|university|college|band|'
                     r'party|organization|organisation|team|league)\b'),
)  # fmt: skip


HONORIFICS = frozenset(
    'King Queen Prince Princess Duke Duchess Count Countess Emperor Empress'
    ' Sir Lord Lady Saint Pope Archduke Archduchess Margrave Landgrave'
    ' Elector General Major President Dr. Infante Infanta HM'.split()
)
_DEMONYM_SET = frozenset(d.split('_')[0] for d in _DEMONYMS)


def is_demonym(word: str) -> bool:
  return word in _DEMONYM_SET


def nationality(first_sentence: str) -> str | None:
  """The demonym of "X is/was a(n) [adj] <Demonym> ..." in a lead sentence."""
  m = _DEMONYM_RE.search(first_sentence)
  return m.group(1) if m else None


def pronoun_gender(text: str) -> str | None:
  """'m' or 'f' when one pronoun set clearly dominates, else None."""
  words = re.findall(r'\b(?:he|his|him|she|her|hers)\b', text.lower())
  male = sum(w in ('he', 'his', 'him') for w in words)
  female = len(words) - male
  if male >= 1 and male >= 3 * female:
    return 'm'
  if female >= 1 and female >= 3 * male:
    return 'f'
  return None


def entity_type(doc: Document) -> str:
  """One of TYPES, from the title's disambiguation and the lead sentence."""
  title_paren = re.search(r'\(([^()]*)\)\s*$', doc.title)
  hint = title_paren.group(1) if title_paren else ''
  lead = doc.text[:300]
  if _LIFE_PAREN.search(lead[: len(doc.title) + 80]) or re.search(
      r'\b(?:actor|actress|singer|politician|footballer|writer|director|'
      r'player|painter|poet|bishop|king|queen|prince|princess|duke|duchess|'
      r'count|countess)\b',
      hint,
  ):
    return 'person'
  first = lead.split('. ')[0]
  for kind, pattern in _TYPE_WORDS:
    if re.search(pattern, hint) or re.search(
        r'\b(?:is|was) (?:an?|the) [^.]{0,60}?' + pattern, first
    ):
      return kind
  if pronoun_gender(doc.text):
    return 'person'
  return 'other'


def title_index(docs: list[Document]) -> dict[tuple, str]:
  """Mention key → doc_id for titles usable as link targets.

  The same rule as `corpus.links.build_linker` (unambiguous, capitalised,
  not numeric, not a short single word), so a resolved object name is
  exactly what the link graph would link.
  """
  linker = links.build_linker(docs)
  out = {}
  for entries in linker.keys.values():
    for key, doc_id in entries:
      out[key] = doc_id
  return out


def display_name(title: str) -> str:
  """A title without its parenthesised disambiguation."""
  return re.sub(r'\s*\([^()]*\)\s*$', '', title).strip()


def ambiguous_keys(docs: list[Document]) -> set[tuple]:
  """Mention keys shared by two or more documents."""
  count: dict[tuple, int] = {}
  for d in docs:
    k = links.mention_key(d.title)
    count[k] = count.get(k, 0) + 1
  return {k for k, n in count.items() if n > 1}
