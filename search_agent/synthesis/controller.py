"""The controller's checks on a batch of proposals (open recipe).

In order, the first failure returns a proposal to the generator:
  evidence     every page of the path exists and each claim's passage is
               in its page's text;
  leakage      the answer page's exact title, or the answer or an alias
               (as a plain substring, raw or normalised as
               rewards/answer_match does), is not in the question;
  uniqueness   the named start resolves to one page (its mention key is
               shared by no other title), the answer page's title is
               unambiguous, and every hop is functional in the full claim
               set (an Iris question's steps are distilled relations, not
               claims of the set, and are not looked up);
  shortcut     simple probe queries built from the question run through
               the real search engine; a probe whose top k holds the
               answer page, or a page directly connected to the answer on
               the path (the page the last claim is read from), sends the
               question back (the seed's rule). No page is exempt: a
               question naming the page its answer is read from is the
               shortcut itself. A probe the engine cannot run (a query
               that does not parse) fails the check too: no shortcut was
               ruled out. `keep_lookups` (off in the recipe) keeps such
               one-hop lookups for a tiny model learning the tool loop: the
               named start may then appear in probe results.
"""

import dataclasses
import re
from typing import Any, Sequence

from search_agent.corpus import links
from search_agent.corpus.record import Document
from search_agent.rewards.answer_match import normalize_answer
from search_agent.search.engine import SearchEngine
from search_agent.synthesis import entities
from search_agent.synthesis import iris
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Proposal

CHECKS = ('evidence', 'leakage', 'uniqueness', 'shortcut')


@dataclasses.dataclass(frozen=True, kw_only=True)
class ControllerConfig:
  """Controller config_lib.

  Attributes:
    probe_k: Top-k of each shortcut probe.
    max_probes: Probes per question (question, start name, start + answer
      relation).
    keep_lookups: Keep questions that name the page their answer is read
      from (one-hop lookups), which the seed's rule sends back: the tiny
      main job's model learns the tool loop on them. False in the recipe.
  """

  probe_k: int = 3
  max_probes: int = 3
  keep_lookups: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Verdict:
  """The controller's decision on one proposal.

  Attributes:
    passed: All checks passed.
    failed: Name of the first failed check ('' if passed).
    reason: Why it failed, for the generator and the decision log.
    probes: Each probe query with its top-k doc_ids.
  """

  passed: bool
  failed: str = ''
  reason: str = ''
  probes: tuple[dict[str, Any], ...] = ()

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def _contains(haystack: str, needle: str) -> bool:
  """Plain substring containment, raw (case-folded) or normalised.

  Deliberately strict: 'Lothair I' counts as contained in 'Lothair II'.
  """
  n = normalize_answer(needle)
  raw = needle.strip().lower()
  return bool(n) and (
      n in normalize_answer(haystack) or (raw and raw in haystack.lower())
  )


def _clean(q: str) -> str:
  return ' '.join(re.sub(r'["\\:]', ' ', q).split())


class Controller:
  """Runs the checks against the corpus, the claim set and the engine."""

  def __init__(
      self,
      docs: dict[str, Document],
      claims: dict[str, list[PageClaim]],
      engine: SearchEngine,
      config: ControllerConfig = ControllerConfig(),
  ):
    self._docs = docs
    self._engine = engine
    self._config = config
    self._ambiguous = entities.ambiguous_keys(list(docs.values()))
    self._objects: dict[tuple[str, str], set[str]] = {}
    for doc_id, cs in claims.items():
      for c in cs:
        self._objects.setdefault((doc_id, c.relation), set()).add(c.object)

  def probes(self, p: Proposal) -> list[str]:
    """Simple queries a shortcut-seeking solver would try first."""
    start = entities.display_name(self._docs[p.path.start].title)
    rel = p.path.claims[-1].relation.replace('_', ' ')
    out = [_clean(p.question)]
    if start.lower() in p.question.lower():
      out += [_clean(start), _clean(f'{start} {rel}')]
    return list(dict.fromkeys(q for q in out if q))[: self._config.max_probes]

  def check_static(self, p: Proposal) -> Verdict | None:
    """Evidence, leakage and uniqueness; a failing Verdict or None."""
    for c in p.path.claims:
      doc = self._docs.get(c.subject)
      if doc is None or (c.object_doc and c.object_doc not in self._docs):
        return Verdict(
            passed=False,
            failed='evidence',
            reason=f'page {c.subject or c.object_doc!r} is not in the corpus',
        )
      if c.passage not in doc.text and c.passage.rstrip('.') not in doc.text:
        return Verdict(
            passed=False,
            failed='evidence',
            reason=f'claim passage not found in {doc.title!r}',
        )
    if p.path.answer_doc:
      title = self._docs[p.path.answer_doc].title
      if title in p.question:
        return Verdict(
            passed=False,
            failed='leakage',
            reason=f'answer page title {title!r} is in the question',
        )
    for form in (p.answer,) + p.aliases:
      if _contains(p.question, form):
        return Verdict(
            passed=False,
            failed='leakage',
            reason=f'answer form {form!r} is in the question',
        )
    return self._uniqueness(p)

  def _uniqueness(self, p: Proposal) -> Verdict | None:
    start_title = self._docs[p.path.start].title
    if links.mention_key(start_title) in self._ambiguous:
      return Verdict(
          passed=False,
          failed='uniqueness',
          reason=f'start {entities.display_name(start_title)!r} names'
          ' several pages',
      )
    if p.path.answer_doc:
      key = links.mention_key(self._docs[p.path.answer_doc].title)
      if key in self._ambiguous:
        return Verdict(
            passed=False,
            failed='uniqueness',
            reason='the answer name is shared by several pages',
        )
    for c in p.path.claims:
      if c.extractor.startswith(iris.IRIS_EXTRACTOR + ':'):
        continue  # an Iris step: a distilled relation, not in the claim set
      if len(self._objects.get((c.subject, c.relation), ())) != 1:
        return Verdict(
            passed=False,
            failed='uniqueness',
            reason=f'{c.relation} of {c.subject!r} has several objects',
        )
    return None

  def _targets(self, p: Proposal) -> set[str]:
    """Pages whose retrieval by a probe is a shortcut."""
    last = p.path.claims[-1]
    out = {last.subject} | ({last.object_doc} - {None})
    if self._config.keep_lookups:
      out.discard(p.path.start)
    return out

  def check_batch(self, proposals: Sequence[Proposal]) -> list[Verdict]:
    """All checks for a batch; probes of the batch go in one search call."""
    verdicts: list[Verdict | None] = [self.check_static(p) for p in proposals]
    queries, owners = [], []
    for i, (p, v) in enumerate(zip(proposals, verdicts)):
      if v is None:
        for q in self.probes(p):
          queries.append(q)
          owners.append(i)
    results = (
        self._engine.search_or_errors(queries, self._config.probe_k)
        if queries
        else []
    )
    probe_log: dict[int, list[dict[str, Any]]] = {}
    for i, q, hits in zip(owners, queries, results):
      entry = {'query': q, 'top': []}
      if isinstance(hits, Exception):
        entry['error'] = f'{type(hits).__name__}: {hits}'
      else:
        entry['top'] = [h.doc_id for h in hits]
      probe_log.setdefault(i, []).append(entry)
    out = []
    for i, (p, v) in enumerate(zip(proposals, verdicts)):
      if v is not None:
        out.append(v)
        continue
      log = tuple(probe_log.get(i, ()))
      failed = next((x for x in log if 'error' in x), None)
      if failed:
        out.append(
            Verdict(
                passed=False,
                failed='shortcut',
                reason=f'probe {failed["query"]!r} could not run'
                f' ({failed["error"][:200]}); rephrase the question',
                probes=log,
            )
        )
        continue
      targets = self._targets(p)
      hit = next((x for x in log if targets & set(x['top'])), None)
      if hit:
        found = sorted(targets & set(hit['top']))
        out.append(
            Verdict(
                passed=False,
                failed='shortcut',
                reason=f'probe {hit["query"]!r} retrieves {found} in the top'
                f' {self._config.probe_k}',
                probes=log,
            )
        )
      else:
        out.append(Verdict(passed=True, probes=log))
    return out
