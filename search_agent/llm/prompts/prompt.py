"""Prompts as files: load one by name, fill its `{field}` markers, hash it.

Only the named markers are replaced, so prompts may contain literal JSON
braces. Manifests record `Prompt.sha256` so results name the exact text used.
"""

import dataclasses
import functools
import hashlib
import pathlib
import re

PROMPT_DIR = pathlib.Path(__file__).resolve().parent
_MARKER = re.compile(r'\{([a-z_]+)\}')


class PromptError(ValueError):
  """A prompt file is missing or a field was not supplied."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Prompt:
  """One prompt template.

  Attributes:
    name: File name under the prompts directory (or the path given).
    text: The template text, exactly as stored.
    sha256: Hex SHA-256 of `text` (UTF-8), recorded in manifests.
  """

  name: str
  text: str
  sha256: str

  @property
  def fields(self) -> frozenset[str]:
    return frozenset(_MARKER.findall(self.text))

  def render(self, **values: str) -> str:
    """Replaces every `{field}` marker; all of them must be given."""
    missing = self.fields - values.keys()
    extra = values.keys() - self.fields
    if missing or extra:
      raise PromptError(
          f'prompt {self.name}: missing fields {sorted(missing)}, unknown'
          f' fields {sorted(extra)}; it takes {sorted(self.fields)}'
      )
    return _MARKER.sub(lambda m: str(values[m.group(1)]), self.text)


def from_text(name: str, text: str) -> Prompt:
  return Prompt(
      name=name,
      text=text,
      sha256=hashlib.sha256(text.encode('utf-8')).hexdigest(),
  )


@functools.lru_cache(maxsize=None)
def load(name: str) -> Prompt:
  """Loads a prompt by file name (in this directory) or by path.

  Cached per process: a Toolbox (one per trajectory) loads its visit and
  rerank prompts on creation, and prompt files do not change during a run.
  """
  path = pathlib.Path(name)
  if not path.is_absolute() and len(path.parts) == 1:
    path = PROMPT_DIR / name
  if not path.is_file():
    available = sorted(
        p.name for p in PROMPT_DIR.iterdir() if p.suffix in ('.md', '.txt')
    )
    raise PromptError(
        f'prompt file {path} does not exist; bundled prompts: {available}'
    )
  return from_text(name, path.read_text(encoding='utf-8'))
