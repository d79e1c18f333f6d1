"""Goal-directed reading of a page for the `visit` tool (open-recipe.md).

"To examine selected results, the agent calls visit with an information goal
that guides evidence extraction from the underlying documents": per page, the
evidence relevant to the goal and a page summary, "produced by an auxiliary
language model". The model gets the goal, title, URL and page text (a page
longer than `max_content_words` is shortened to its beginning plus the
passages that best match the goal, and the reading says so) and answers in
`<evidence>` / `<summary>` blocks (prompt: visit_summary.txt).

With no model configured, or when the model fails and
`on_llm_error='extractive'`, the reading is extractive: the page windows that
best match the goal by BM25, with no summary, and it says so. A failed model
call with `on_llm_error='raise'` (the default) raises `VisitError`.
"""

import dataclasses
import re
from typing import Callable

from search_agent.corpus.record import Document
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import snippets
from search_agent.search.analysis import QueryAnalyzer

ON_LLM_ERROR = ('raise', 'extractive')
EXTRACTIVE_NOTE = (
    'No summarizer model is configured: the evidence below is the passages of'
    ' the page that best match the goal (extractive, BM25); there is no'
    ' summary.'
)
_THINK_RE = re.compile(r'<think>.*?</think>', re.S)
_BLOCK_RE = {
    k: re.compile(rf'<{k}>(.*?)(?:</{k}>|$)', re.S)
    for k in ('evidence', 'summary')
}

WindowsFn = Callable[[str, str, int], list[str]]
"""(page text, goal, n) -> up to n passages best matching the goal."""


def bm25_windows(
    analyzer: QueryAnalyzer | None = None, pad_words: int = 32
) -> WindowsFn:
  """The extractive reader: `snippets.best_windows`, padded, best first.

  A best window may hold its matches at one edge (ties go to the earliest
  start), so each is widened by `pad_words` on both sides; widened windows
  that overlap a better one are merged into it.

  Args:
    analyzer: Analyzer matching the index; default stemmed English with
      stopwords removed (the tantivy backend's default).
    pad_words: Words added before and after each window.
  """
  analyzer = analyzer or QueryAnalyzer(stem=True, remove_stopwords=True)

  def windows(text: str, goal: str, n: int) -> list[str]:
    words = text.split()  # the word positions best_windows counts
    spans: list[tuple[int, int]] = []
    for w in snippets.best_windows(text, goal, analyzer, top_n=n):
      lo, hi = max(0, w.start - pad_words), min(len(words), w.end + pad_words)
      touched = [i for i, (a, b) in enumerate(spans) if lo < b and a < hi]
      if not touched:
        spans.append((lo, hi))
        continue
      # Merged into the best span it touches, with every other it touches
      # (a window between two spans joins both: no words shown twice).
      lo = min([lo] + [spans[i][0] for i in touched])
      hi = max([hi] + [spans[i][1] for i in touched])
      spans[touched[0]] = (lo, hi)
      spans = [s for i, s in enumerate(spans) if i not in touched[1:]]
    return [' '.join(words[lo:hi]) for lo, hi in spans]

  return windows


class VisitError(RuntimeError):
  """Reading a page failed and the config says to raise."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class VisitConfig:
  """How `visit` reads pages.

  Attributes:
    max_content_words: Page words given to the summarizer (6,000 words ~ 8k
      tokens keeps a call cheap). A longer page is shown as its first half
      budget of words plus the 64-word windows of the rest that best match
      the goal (BM25), filling the other half.
    extract_windows: Passages returned by the extractive reading.
    on_llm_error: 'raise' or 'extractive' (fall back and record why).
    prompt: Prompt file name under search_agent/llm/prompts/.
    temperature: Summarizer sampling temperature.
    max_tokens: Summarizer reply budget.
  """

  max_content_words: int = 6000
  extract_windows: int = 3
  on_llm_error: str = 'raise'
  prompt: str = 'visit_summary.txt'
  temperature: float = 0.0
  max_tokens: int = 2048

  def __post_init__(self):
    if self.on_llm_error not in ON_LLM_ERROR:
      raise ValueError(
          f'on_llm_error must be one of {ON_LLM_ERROR}: {self.on_llm_error!r}'
      )
    if self.max_content_words < 1 or self.extract_windows < 1:
      raise ValueError('max_content_words and extract_windows must be >= 1')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reading:
  """What visit learned from one page.

  Attributes:
    evidence: Goal-relevant evidence (quotes or passages).
    summary: Page summary ('' for an extractive reading).
    method: 'llm' or 'extractive'.
    fallback: Why an extractive reading replaced the model, or None.
    truncated: The page was over max_content_words; the model saw its
      beginning and the passages that best match the goal.
    tagged: The model reply had the <evidence>/<summary> blocks (an
      untagged reply is kept whole as the summary).
  """

  evidence: str
  summary: str
  method: str
  fallback: str | None = None
  truncated: bool = False
  tagged: bool = True


def parse_reply(reply: str) -> tuple[str, str, bool]:
  """(evidence, summary, tagged) from a summarizer reply."""
  text = _THINK_RE.sub(' ', reply).split('</think>')[-1].strip()
  found = {k: r.search(text) for k, r in _BLOCK_RE.items()}
  if not any(found.values()):
    return '', text, False
  ev, su = (
      found[k].group(1).strip() if found[k] else ''
      for k in ('evidence', 'summary')
  )
  return ev, su, True


class PageReader:
  """Reads pages for a goal with an optional auxiliary LLM."""

  def __init__(
      self,
      llm: protocol.LLM | None,
      config: VisitConfig = VisitConfig(),
      windows_fn: WindowsFn | None = None,
  ):
    self.llm = llm
    self.config = config
    self._windows_fn = windows_fn or bm25_windows()
    self.prompt = prompt_lib.load(config.prompt)

  def extract(self, doc: Document, goal: str, why: str | None) -> Reading:
    """The extractive reading: best-matching passages, no summary."""
    windows = self._windows_fn(doc.text, goal, self.config.extract_windows)
    if windows:
      evidence = '\n...\n'.join(windows)
    else:
      lead = ' '.join(doc.text.split()[:64])
      evidence = f'(no passage matches the goal; the page begins: {lead})'
    return Reading(
        evidence=evidence, summary='', method='extractive', fallback=why
    )

  def _content(self, doc: Document, goal: str) -> tuple[str, bool]:
    """The page text for the model, and whether it was shortened."""
    words = doc.text.split()
    budget = self.config.max_content_words
    if len(words) <= budget:
      return doc.text, False
    head, left = budget // 2, budget - budget // 2
    parts = [' '.join(words[:head])]
    for window in self._windows_fn(' '.join(words[head:]), goal, left // 64):
      kept = window.split()
      cut = max(0, len(kept) - left)  # trimmed evenly off both ends
      kept = kept[cut // 2 : len(kept) - (cut - cut // 2)]
      parts.append(' '.join(kept))
      left -= len(kept)
      if not left:
        break
    return '\n[...]\n'.join(parts), True

  async def read(self, doc: Document, goal: str) -> Reading:
    """Reads one page for a goal.

    Raises:
      VisitError: if the model call fails, or replies with nothing, and
        on_llm_error='raise'.
    """
    if self.llm is None:
      return self.extract(doc, goal, None)
    content, truncated = self._content(doc, goal)
    message = self.prompt.render(
        goal=goal, title=doc.title, url=doc.url, content=content
    )
    params = protocol.SamplingParams(
        temperature=self.config.temperature, max_tokens=self.config.max_tokens
    )
    try:
      completions = await self.llm.chat(
          [{'role': 'user', 'content': message}], params
      )
      evidence, summary, tagged = parse_reply(completions[0].text)
      if not evidence and not summary:
        raise protocol.LLMError(f'empty reply: {completions[0].text!r:.200}')
    except protocol.LLMError as e:
      reason = f'{type(e).__name__}: {e}'
      if self.config.on_llm_error == 'raise':
        raise VisitError(
            f'summarizing {doc.url} with {self.llm.name!r} failed ({reason});'
            " fix the summarizer or set on_llm_error='extractive'"
        ) from e
      return self.extract(doc, goal, reason)
    return Reading(
        evidence=evidence,
        summary=summary,
        method='llm',
        truncated=truncated,
        tagged=tagged,
    )


def format_reading(ref_id: str, doc: Document, reading: Reading) -> str:
  """The observation block of one visited page."""
  lines = [f'[{ref_id}] {doc.title}', f'URL: {doc.url}']
  if reading.method == 'extractive':
    note = EXTRACTIVE_NOTE
    if reading.fallback:
      note = (
          f'The summarizer model failed ({reading.fallback}): the evidence'
          ' below is the passages of the page that best match the goal'
          ' (extractive, BM25); there is no summary.'
      )
    lines += [f'Note: {note}', f'Evidence:\n{reading.evidence}']
  else:
    if reading.truncated:
      lines.append(
          'Note: the page was long; its beginning and the passages that best'
          ' match the goal were read.'
      )
    lines += [
        f'Evidence:\n{reading.evidence or "(none given)"}',
        f'Summary:\n{reading.summary or "(none given)"}',
    ]
  return '\n'.join(lines)
