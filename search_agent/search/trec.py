"""TREC qrels, topics and run files, and evidence recall@k.

Formats:
  * qrels: `qid 0|Q0 docid relevance` per line (whitespace separated), e.g.
    ../shared/data/benchmarks/browsecomp-plus-qrel_evidence.txt. A judgment
    with relevance > 0 is relevant.
  * topics: `qid<TAB>query text` per line.
  * run: `qid Q0 docid rank score tag` per line, ranks from 1.

Evidence recall@k (open-recipe.md, "High-Fidelity Local Search Environment":
"local retrieval recovers roughly 74% of the reference evidence targets within
its top ten results"): for query q with relevant set R_q and top-k retrieved
list L_q, the macro recall is mean_q |R_q ∩ L_q[:k]| / |R_q| and the micro
recall is Σ_q |R_q ∩ L_q[:k]| / Σ_q |R_q| (the share of all evidence targets
found). Queries without relevant documents are skipped; queries with
judgments but no run entries count as zero recall.
"""

import dataclasses
import os
from typing import Mapping, Sequence

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]


class TrecFormatError(ValueError):
  """A TREC file line is malformed; the message names file and line."""


def _lines(path):
  with open(path, encoding='utf-8') as f:
    for line_no, line in enumerate(f, 1):
      if line.strip():
        yield line_no, line.rstrip('\n')


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
  """Reads a qrels file into {qid: {docid: relevance}}."""
  qrels: Qrels = {}
  for line_no, line in _lines(path):
    parts = line.split()
    if len(parts) != 4 or not parts[3].lstrip('-').isdigit():
      raise TrecFormatError(
          f'{path}:{line_no}: expected "qid 0 docid relevance", got'
          f' {line!r:.120}'
      )
    qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
  return qrels


def write_qrels(path: str | os.PathLike[str], qrels: Qrels) -> None:
  """Writes {qid: {docid: relevance}} as `qid 0 docid relevance` lines."""
  with open(path, 'w', encoding='utf-8') as f:
    for qid, judged in qrels.items():
      for docid, rel in judged.items():
        _check_token('qid', qid)
        _check_token('docid', docid)
        f.write(f'{qid} 0 {docid} {rel}\n')


def read_topics(path: str | os.PathLike[str]) -> dict[str, str]:
  """Reads `qid<TAB>query` lines into {qid: query}, in file order."""
  topics = {}
  for line_no, line in _lines(path):
    qid, sep, query = line.partition('\t')
    if not sep or not qid.strip() or not query.strip():
      raise TrecFormatError(
          f'{path}:{line_no}: expected "qid<TAB>query", got {line!r:.120}'
      )
    topics[qid.strip()] = query.strip()
  return topics


def write_topics(path: str | os.PathLike[str], topics: Mapping[str, str]):
  """Writes {qid: query} as `qid<TAB>query` lines."""
  with open(path, 'w', encoding='utf-8') as f:
    for qid, query in topics.items():
      _check_token('qid', qid)
      f.write(f'{qid}\t{" ".join(query.split())}\n')


def _check_token(kind: str, value: str) -> None:
  if not value or any(c.isspace() for c in value):
    raise TrecFormatError(
        f'{kind} {value!r} is empty or holds whitespace; TREC files are'
        ' whitespace separated, map ids to whitespace-free ones first'
    )


def write_run(
    path: str | os.PathLike[str], run: Run, tag: str = 'search_agent'
) -> None:
  """Writes {qid: [(docid, score), ...] best first} as a TREC run."""
  _check_token('tag', tag)
  with open(path, 'w', encoding='utf-8') as f:
    for qid, ranked in run.items():
      _check_token('qid', qid)
      for rank, (docid, score) in enumerate(ranked, 1):
        _check_token('docid', docid)
        f.write(f'{qid} Q0 {docid} {rank} {score:.6f} {tag}\n')


def read_run(path: str | os.PathLike[str]) -> Run:
  """Reads a TREC run into {qid: [(docid, score), ...]} ordered by rank."""
  rows: dict[str, list[tuple[int, str, float]]] = {}
  for line_no, line in _lines(path):
    parts = line.split()
    try:
      qid, _, docid, rank, score = parts[:5]
      rows.setdefault(qid, []).append((int(rank), docid, float(score)))
    except ValueError as e:
      raise TrecFormatError(
          f'{path}:{line_no}: expected "qid Q0 docid rank score tag", got'
          f' {line!r:.120}'
      ) from e
  return {
      qid: [(d, s) for _, d, s in sorted(r, key=lambda x: x[0])]
      for qid, r in rows.items()
  }


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecallReport:
  """Evidence recall@k of a run against qrels.

  Attributes:
    k: Cutoff.
    num_queries: Queries with at least one relevant document.
    num_targets: Relevant (query, document) pairs over those queries.
    num_found: Of those, how many the run has in its top k.
    macro: Mean per-query recall.
    micro: num_found / num_targets.
    per_query: {qid: recall} for every counted query.
  """

  k: int
  num_queries: int
  num_targets: int
  num_found: int
  macro: float
  micro: float
  per_query: dict[str, float]


def evidence_recall(qrels: Qrels, run: Run, k: int) -> RecallReport:
  """Evidence recall@k (see the module docstring for the formulas)."""
  if k < 1:
    raise ValueError(f'k must be >= 1, got {k}')
  per_query, targets, found = {}, 0, 0
  for qid, judged in qrels.items():
    relevant = {d for d, rel in judged.items() if rel > 0}
    if not relevant:
      continue
    top = {d for d, _ in run.get(qid, [])[:k]}
    hit = len(relevant & top)
    per_query[qid] = hit / len(relevant)
    targets += len(relevant)
    found += hit
  n = len(per_query)
  return RecallReport(
      k=k,
      num_queries=n,
      num_targets=targets,
      num_found=found,
      macro=sum(per_query.values()) / n if n else 0.0,
      micro=found / targets if targets else 0.0,
      per_query=per_query,
  )


def run_from_ranked(
    qids: Sequence[str], ranked: Sequence[Sequence[tuple[str, float]]]
) -> Run:
  """Pairs query ids with ranked (docid, score) lists."""
  if len(qids) != len(ranked):
    raise ValueError(f'{len(qids)} qids but {len(ranked)} ranked lists')
  return {q: list(r) for q, r in zip(qids, ranked)}
