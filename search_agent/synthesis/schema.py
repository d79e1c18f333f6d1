"""Records of the synthesis pipeline: page claims, paths, proposals.

Everything here is a frozen dataclass with a JSON form, so the journal
(`synthesis/journal.py`) can store it and a resumed run reads it back.
"""

import dataclasses
from typing import Any

from search_agent.agent import task as task_lib

# Relations whose object is an entity that may have its own page.
ENTITY_RELATIONS = (
    'director',
    'producer',
    'screenwriter',
    'composer',
    'performer',
    'author',
    'father',
    'mother',
    'spouse',
)
# Relations whose object is a literal value (date, place, demonym, year).
VALUE_RELATIONS = (
    'date_of_birth',
    'date_of_death',
    'place_of_birth',
    'place_of_death',
    'nationality',
    'release_year',
)
RELATIONS = ENTITY_RELATIONS + VALUE_RELATIONS


@dataclasses.dataclass(frozen=True, kw_only=True)
class PageClaim:
  """A (subject, relation, object) claim read from one page's passage.

  Attributes:
    subject: doc_id of the page the claim is about (and was read from).
    relation: One of `RELATIONS`.
    object: The object as written in the passage (name, date, place).
    object_doc: doc_id of the object's page, when it has one.
    passage: The supporting sentence.
    extractor: 'pattern:<rule>' or 'llm:<model>'.
  """

  subject: str
  relation: str
  object: str
  object_doc: str | None = None
  passage: str = ''
  extractor: str = ''

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'PageClaim':
    return cls(**obj)

  def as_task_claim(self, subject_title: str) -> task_lib.Claim:
    return task_lib.Claim(
        subject=subject_title,
        relation=self.relation.replace('_', ' '),
        object=self.object,
        source=self.passage,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Path:
  """A chain of claims from a start page to an answer.

  Claim i is read from page i of `pages`; the answer is the last claim's
  object (and `answer_doc` its page, if any).

  Attributes:
    claims: The hop claims, start first.
  """

  claims: tuple[PageClaim, ...]

  @property
  def hops(self) -> int:
    return len(self.claims)

  @property
  def start(self) -> str:
    return self.claims[0].subject

  @property
  def answer(self) -> str:
    return self.claims[-1].object

  @property
  def answer_doc(self) -> str | None:
    return self.claims[-1].object_doc

  @property
  def pages(self) -> tuple[str, ...]:
    """Ordered doc_ids of the path: start, intermediates, answer page."""
    out = [c.subject for c in self.claims]
    if self.answer_doc:
      out.append(self.answer_doc)
    return tuple(out)

  @property
  def answer_key(self) -> str:
    """What identifies the answer: its page, else relation-free value."""
    return self.answer_doc or f'value:{self.answer}'

  def to_json(self) -> dict[str, Any]:
    return {'claims': [c.to_json() for c in self.claims]}

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'Path':
    return cls(claims=tuple(PageClaim.from_json(c) for c in obj['claims']))


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvidenceGraph:
  """An answer with the pages, paths and claims that reach it.

  Attributes:
    id: Stable id (anchor graph + answer).
    anchor: Id of the anchor graph it was drawn from.
    answer: The reference answer.
    answer_doc: The answer's page, if any.
    paths: Paths reaching the answer (1–3 hops), shortest first.
  """

  id: str
  anchor: str
  answer: str
  answer_doc: str | None
  paths: tuple[Path, ...]

  @property
  def pages(self) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for p in self.paths:
      out.update(dict.fromkeys(p.pages))
    return tuple(out)

  def to_json(self) -> dict[str, Any]:
    return {
        'id': self.id,
        'anchor': self.anchor,
        'answer': self.answer,
        'answer_doc': self.answer_doc,
        'paths': [p.to_json() for p in self.paths],
    }

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'EvidenceGraph':
    return cls(
        id=obj['id'],
        anchor=obj['anchor'],
        answer=obj['answer'],
        answer_doc=obj['answer_doc'],
        paths=tuple(Path.from_json(p) for p in obj['paths']),
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Proposal:
  """A generated question over one path of an evidence graph.

  Attributes:
    id: Stable id (graph id + revision).
    graph: Evidence graph id.
    question: The question text.
    answer: Reference answer.
    aliases: Other accepted forms of the answer.
    path: The evidence path the question was built from.
    generator: 'template:<name>' or 'llm:<model>'.
    revision: 0 for the first proposal of a graph, then 1, 2, ...
    meta: Generator extras (start entities used, template, abstraction).
  """

  id: str
  graph: str
  question: str
  answer: str
  aliases: tuple[str, ...]
  path: Path
  generator: str
  revision: int = 0
  meta: dict[str, Any] = dataclasses.field(default_factory=dict)

  def to_json(self) -> dict[str, Any]:
    out = dataclasses.asdict(self)
    out['path'] = self.path.to_json()
    out['aliases'] = list(self.aliases)
    return out

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'Proposal':
    obj = dict(obj)
    obj['path'] = Path.from_json(obj['path'])
    obj['aliases'] = tuple(obj['aliases'])
    return cls(**obj)
