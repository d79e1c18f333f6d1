"""Evidence recall of retrieved documents and `[docid]` citation metrics.

As BrowseComp-Plus's `scripts_evaluation/evaluate_run.py` computes them:
  * evidence recall of a question = |retrieved ∩ evidence| / |evidence|,
    `retrieved` being the doc ids the search tool returned (not documents
    only read), averaged over the questions that have evidence;
  * citations of a reply = every run of digits inside `[...]` or `【...】`
    (so `[20]` and `[20, 31]` both count; their rule, which also reads
    digits in other bracketed text); precision = |cited ∩ evidence| /
    |cited|, recall = |cited ∩ evidence| / |evidence|, both 0 without
    citations; the summary averages them over the replies that cite.
Evidence ids are compared after joining whitespace with '_' (our task files
name 2Wiki evidence by title, whose doc_id is the title so joined).
"""

import re
import statistics
from typing import Any, Iterable, Sequence

_BRACKETS = re.compile(r'\[([^\[\]]*?)\]|【([^【】]*?)】')
_DIGITS = re.compile(r'\d+')


def _norm(doc_id: str) -> str:
  return '_'.join(str(doc_id).split())


def recall(retrieved: Iterable[str], evidence: Sequence[str]) -> float | None:
  """Share of the evidence that was retrieved; None without evidence."""
  gold = {_norm(e) for e in evidence}
  if not gold:
    return None
  return len(gold & {_norm(d) for d in retrieved}) / len(gold)


def citations(text: str | None) -> list[str]:
  """The doc ids a reply cites (sorted, unique)."""
  found = set()
  for m in _BRACKETS.finditer(text or ''):
    found.update(_DIGITS.findall(m.group(1) or m.group(2) or ''))
  return sorted(found, key=lambda d: (len(d), d))


def citation_metrics(
    cited: Sequence[str], evidence: Sequence[str]
) -> dict[str, Any]:
  """num_citations, num_relevant, precision, recall of one reply."""
  gold = {_norm(e) for e in evidence}
  hit = len(set(cited) & gold)
  return {
      'num_citations': len(cited),
      'num_relevant': len(gold),
      'precision': hit / len(cited) if cited else 0.0,
      'recall': hit / len(gold) if cited and gold else 0.0,
  }


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
  """The evidence and citation figures of a run."""
  recalls = [
      r['evidence_recall'] for r in records
      if r.get('evidence_recall') is not None
  ]  # fmt: skip
  citing = [r for r in records if r.get('cited_doc_ids')]
  mean = lambda xs: statistics.fmean(xs) if xs else None
  return {
      'questions_with_evidence': len(recalls),
      'recall': mean(recalls),
      'citation': {
          'coverage': len(citing) / len(records) if records else None,
          'citations_per_citing_reply': mean(
              [len(r['cited_doc_ids']) for r in citing]
          ),
          'precision': mean([r['citation_precision'] for r in citing]),
          'recall': mean([r['citation_recall'] for r in citing]),
      },
  }
