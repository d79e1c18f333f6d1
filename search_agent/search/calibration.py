"""Retrieval fidelity: known-item topics and TREC runs of the fused search.

The open recipe calibrates its local search by the share of reference
evidence targets found in the top ten results (~74% on its held-out live-API
queries; `trec.evidence_recall`). Without such queries, known-item topics
are made from the corpus itself:

  * a deterministic sample (`seed`) of documents, in doc_id order;
  * the query is the document's first sentence as word tokens, lowercased,
    with every word of the document's title and every English stopword
    removed, cut to `max_words` (documents left with fewer than `min_words`
    are skipped); the title is masked so that the title view cannot simply
    echo it back;
  * the document is the one relevant target of its query.

Linked-pair topics (`make_linked_pair_topics`) ask for two evidence targets
at once, like a multi-hop question: for a document A that links to B (2Wiki
links are derived from exact title mentions), the query is the first
`words_each` words of A's known-item query followed by the first
`words_each` of B's, and both A and B are relevant.
"""

import json
import pathlib
import random
import re
from typing import Sequence

from search_agent.corpus.record import Document
from search_agent.search import analysis
from search_agent.search import trec
from search_agent.search.engine import SearchEngine

_SENTENCE_RE = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9"(])')


def known_item_query(doc: Document, max_words: int) -> list[str]:
  """The title-masked, stopword-free first sentence of a document."""
  first = _SENTENCE_RE.split(doc.text.strip(), maxsplit=1)[0]
  masked = set(analysis.raw_tokens(doc.title)) | set(analysis.ENGLISH_STOPWORDS)
  return [w for w in analysis.raw_tokens(first) if w not in masked][:max_words]


def make_known_item_topics(
    docs: Sequence[Document],
    num_topics: int,
    *,
    seed: int = 0,
    min_words: int = 4,
    max_words: int = 12,
) -> tuple[dict[str, str], trec.Qrels]:
  """Known-item topics and qrels (see the module docstring).

  Returns:
    ({qid: query}, {qid: {doc_id: 1}}), qids 'ki0', 'ki1', ... in order.
  """
  order = sorted(docs, key=lambda d: d.doc_id)
  random.Random(seed).shuffle(order)
  topics, qrels = {}, {}
  for doc in order:
    if len(topics) == num_topics:
      break
    words = known_item_query(doc, max_words)
    if len(words) < min_words:
      continue
    qid = f'ki{len(topics)}'
    topics[qid] = ' '.join(words)
    qrels[qid] = {doc.doc_id: 1}
  return topics, qrels


def make_linked_pair_topics(
    docs: Sequence[Document],
    num_topics: int,
    *,
    seed: int = 0,
    words_each: int = 5,
) -> tuple[dict[str, str], trec.Qrels]:
  """Linked-pair topics and qrels (see the module docstring).

  Returns:
    ({qid: query}, {qid: {a: 1, b: 1}}), qids 'lp0', 'lp1', ...; pairs whose
    halves have fewer than `words_each` words are skipped.
  """
  by_id = {d.doc_id: d for d in docs}
  pairs = sorted(
      (a.doc_id, b)
      for a in docs
      for b in a.links
      if b in by_id and b != a.doc_id
  )
  random.Random(seed).shuffle(pairs)
  topics, qrels = {}, {}
  for a, b in pairs:
    if len(topics) == num_topics:
      break
    halves = [known_item_query(by_id[d], words_each) for d in (a, b)]
    if any(len(h) < words_each for h in halves):
      continue
    qid = f'lp{len(topics)}'
    topics[qid] = ' '.join(halves[0] + halves[1])
    qrels[qid] = {a: 1, b: 1}
  return topics, qrels


def topics_from_tasks(
    paths: Sequence[str | pathlib.Path], docs: Sequence[Document]
) -> tuple[dict[str, str], trec.Qrels, dict[str, str]]:
  """Topics from task JSONL files: the question, its evidence pages as gold.

  Evidence entries are doc_ids or titles of the corpus; a task none of
  whose evidence is in the corpus is skipped.

  Returns:
    ({task id: question}, {task id: {doc_id: 1}}, {task id: group}) with
    the group the sorted gold doc_ids (tasks on the same pages share it,
    so that a split keeps them together).
  """
  by_title = {d.title: d.doc_id for d in docs}
  ids = {d.doc_id for d in docs}
  topics, qrels, groups = {}, {}, {}
  for path in paths:
    for line in pathlib.Path(path).read_text(encoding='utf-8').splitlines():
      if not line.strip():
        continue
      task = json.loads(line)
      gold = {
          e if e in ids else by_title[e]
          for e in task.get('evidence', ())
          if e in ids or e in by_title
      }
      if not gold or not task.get('question'):
        continue
      topics[task['id']] = task['question']
      qrels[task['id']] = {d: 1 for d in sorted(gold)}
      groups[task['id']] = '|'.join(sorted(gold))
  return topics, qrels, groups


def run_topics(
    engine: SearchEngine,
    topics: dict[str, str],
    depth: int,
    batch_size: int = 32,
) -> tuple[trec.Run, dict[str, str]]:
  """Searches every topic; returns (run, {qid: error} for rejected ones)."""
  run, errors = {}, {}
  qids = list(topics)
  for i in range(0, len(qids), batch_size):
    batch = qids[i : i + batch_size]
    answers = engine.search_or_errors([topics[q] for q in batch], depth)
    for qid, answer in zip(batch, answers):
      if isinstance(answer, Exception):
        errors[qid] = str(answer)
        run[qid] = []
      else:
        run[qid] = [(h.doc_id, h.score) for h in answer]
  return run, errors
