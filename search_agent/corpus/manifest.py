"""Build manifests: what went into an index, with a content hash."""

import dataclasses
import hashlib
import json
import pathlib
from typing import Any

from search_agent.corpus.record import Document

MANIFEST_FILE = 'manifest.json'
MANIFEST_VERSION = 1


class CorpusHasher:
  """SHA-256 over the documents in order (canonical JSON, one per line)."""

  def __init__(self):
    self._sha = hashlib.sha256()
    self.count = 0

  def update(self, doc: Document) -> None:
    line = json.dumps(doc.to_json(), sort_keys=True, ensure_ascii=False)
    self._sha.update(line.encode('utf-8') + b'\n')
    self.count += 1

  def hexdigest(self) -> str:
    return self._sha.hexdigest()


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildManifest:
  """A record of one index build.

  Attributes:
    version: Manifest format version.
    backend: Which backend the index is for ('tantivy', 'opensearch', ...).
    corpus: Where the documents came from (kind, path, limits).
    content_sha256: `CorpusHasher` digest of the documents as indexed
      (after link derivation).
    counts: Rows per view: {'doc': ..., 'passage': ..., 'title': ...}.
    config: The index build config (passage window/stride, analysis).
    build_seconds: Wall time of reading plus indexing.
    docs_per_second: counts['doc'] / build_seconds.
    links_note: How the link graph was obtained (from the source, or
      derived from title mentions, with counts).
    created_utc: ISO-8601 time the build finished.
  """

  version: int = MANIFEST_VERSION
  backend: str
  corpus: dict[str, Any]
  content_sha256: str
  counts: dict[str, int]
  config: dict[str, Any]
  build_seconds: float
  docs_per_second: float
  links_note: str
  created_utc: str

  def write(self, directory: str | pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(directory) / MANIFEST_FILE
    path.write_text(json.dumps(dataclasses.asdict(self), indent=1) + '\n')
    return path

  @classmethod
  def read(cls, directory: str | pathlib.Path) -> 'BuildManifest':
    path = pathlib.Path(directory) / MANIFEST_FILE
    if not path.is_file():
      raise FileNotFoundError(f'no {MANIFEST_FILE} in {directory}')
    return cls(**json.loads(path.read_text()))
