"""Unlabeled seed documents as the RL task pool of a self-play run.

A seed is a `Task` whose question holds the document text (the Proposer's
input; never shown to a Solver) and whose answer is empty: id
'seed:<doc_id>', meta {title, doc_id, url}. The RL loop's task pool
dispatches seeds as it dispatches questions (seeded order, resumable).
"""

import json
import os
import random

from search_agent.agent import task as task_lib
from search_agent.corpus import sources


class SeedError(ValueError):
  """The corpus gave too few usable seed documents."""


def sample_seeds(
    spec: sources.CorpusSpec, n: int, seed: int = 0, min_chars: int = 200
) -> list[task_lib.Task]:
  """`n` documents of at least `min_chars` characters, sampled with `seed`."""
  docs, _ = sources.read_corpus(spec)
  pool = [d for d in docs if len(d.text) >= min_chars]
  if len(pool) < n:
    raise SeedError(
        f'the corpus has {len(pool)} documents of >= {min_chars} chars;'
        f' {n} seeds asked for'
    )
  picked = random.Random(seed).sample(pool, n)
  return [seed_task(d) for d in picked]


def seed_task(doc) -> task_lib.Task:
  """The seed of one corpus document (`record.Document`)."""
  return task_lib.Task(
      id=f'seed:{doc.doc_id}',
      question=doc.text,
      answer='',
      meta={'title': doc.title, 'doc_id': doc.doc_id, 'url': doc.url},
  )


def seeds_by_title(spec: sources.CorpusSpec) -> dict[str, task_lib.Task]:
  """Every document's seed, by page title (the first of equal titles)."""
  docs, _ = sources.read_corpus(spec)
  out = {}
  for d in docs:
    out.setdefault(d.title, seed_task(d))
  return out


def write_tasks(path: str, tasks: list[task_lib.Task]) -> None:
  """Writes Task JSONL atomically (temp file + rename)."""
  tmp = f'{path}.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    for t in tasks:
      f.write(json.dumps(t.to_json()) + '\n')
  os.replace(tmp, path)
