"""The normalized document record every corpus reader produces."""

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class Document:
  """One normalized document.

  Attributes:
    doc_id: Stable identifier, unique within a corpus.
    title: Page title (may be empty for web pages without one).
    url: Canonical URL; synthetic corpora use `https://<domain>/<slug>`.
    text: Full plain text.
    links: doc_ids (or titles, before resolution) this document links to.
  """

  doc_id: str
  title: str
  url: str
  text: str
  links: tuple[str, ...] = ()

  def to_json(self) -> dict[str, Any]:
    return {
        'doc_id': self.doc_id,
        'title': self.title,
        'url': self.url,
        'text': self.text,
        'links': list(self.links),
    }

  @classmethod
  def from_json(cls, obj: dict[str, Any]) -> 'Document':
    missing = [k for k in ('doc_id', 'title', 'url', 'text') if k not in obj]
    if missing:
      raise ValueError(
          f'document record is missing fields {missing}: {obj!r:.200}'
      )
    return cls(
        doc_id=str(obj['doc_id']),
        title=str(obj['title']),
        url=str(obj['url']),
        text=str(obj['text']),
        links=tuple(obj.get('links') or ()),
    )
