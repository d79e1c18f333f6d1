"""Accepted proposals → `Task` records (agent/task.py format)."""

import dataclasses
import hashlib
from typing import Any, Sequence

from search_agent.agent.task import Claim
from search_agent.agent.task import Task
from search_agent.corpus.record import Document
from search_agent.rewards.answer_match import normalize_answer
from search_agent.synthesis import templates
from search_agent.synthesis.schema import Proposal


def task_from_proposal(
    p: Proposal,
    docs: dict[str, Document],
    *,
    anchor: str,
    entry: dict[str, Any],
    required: Sequence[Claim] | None = None,
) -> Task:
  """The task of an accepted proposal, with its private evidence path.

  Args:
    p: The accepted proposal.
    docs: The corpus by doc_id (titles of the evidence pages).
    anchor: Id of the anchor graph the evidence graph came from.
    entry: The proposal's decision entry (controller probes, solver).
    required: Required claims chosen by the claim judge; None keeps the
      path's hop claims (programmatic selection).
  """
  titles = [docs[d].title for d in p.path.pages]
  hop_claims = [c.as_task_claim(docs[c.subject].title) for c in p.path.claims]
  claims = tuple(required) if required is not None else tuple(hop_claims)
  digest = hashlib.sha1(p.id.encode('utf-8')).hexdigest()[:12]
  meta = {
      'source': 'synthesis',
      'hops': p.path.hops,
      'evidence_path': titles,
      'hop_claims': [
          {
              'subject': docs[c.subject].title,
              'relation': c.relation,
              'object': c.object,
              'object_page': docs[c.object_doc].title if c.object_doc else None,
              'passage': c.passage,
              'extractor': c.extractor,
          }
          for c in p.path.claims
      ],
      'relations': [c.relation for c in p.path.claims],
      'answer_page': docs[p.path.answer_doc].title
      if p.path.answer_doc
      else None,
      'start': docs[p.path.start].title,
      'evidence_graph': p.graph,
      'anchor_graph': anchor,
      'proposal': p.id,
      'revision': p.revision,
      'generator': p.generator,
      # The question frame's id (synthesis/phrasings.py); None when an LLM
      # wrote the question.
      'phrasing': p.meta.get('phrasing'),
      'required_claims': 'judge' if required is not None else 'path',
      'generator_meta': p.meta,
      'probes': entry.get('controller', {}).get('probes', []),
  }
  solver = entry.get('solver')
  if isinstance(solver, dict):
    meta['solver_calls'] = solver.get('calls')
  return Task(
      id=f'syn-{digest}',
      question=p.question,
      answer=p.answer,
      aliases=p.aliases,
      evidence=tuple(titles),
      claims=claims,
      meta=meta,
  )


def dedupe(tasks: Sequence[Task]) -> tuple[list[Task], int]:
  """Drops tasks whose normalised question repeats; (kept, dropped)."""
  seen, out = set(), []
  for t in tasks:
    key = normalize_answer(t.question)
    if key not in seen:
      seen.add(key)
      out.append(t)
  return out, len(tasks) - len(out)


def ask_again(task: Task, phrasing: str) -> Task:
  """A template task asked in phrasing `phrasing`: the same answer, evidence
  and claims; its own id; meta `rephrases` names the task."""
  start = task.meta['generator_meta']['start_phrase']
  question = templates.question_of(start, task.meta['relations'], phrasing)
  return dataclasses.replace(
      task,
      id=f'{task.id}-{phrasing.replace("/", "-")}',
      question=question,
      meta=dict(task.meta, phrasing=phrasing, rephrases=task.id),
  )
