r"""Retrieval fidelity: evidence recall@k of the fused search, TREC run export.

  python -m index.calibrate --config=tpu_configs/search/calibrate.py:tiny \
      --workdir=/tmp/cal

The open recipe calibrates its local search by the share of reference
evidence targets found in the top ten results (~74% on its held-out live-API
queries). Here topics and qrels are TREC files, or, when none are given,
known-item topics made from the corpus itself:

  * a deterministic sample (`seed`) of documents, in doc_id order;
  * the query is the document's first sentence as word tokens, lowercased,
    with every word of the document's title and every English stopword
    removed, cut to `max_query_words` (documents left with fewer than
    `min_query_words` are skipped); the title is masked so that the title
    view cannot simply echo it back;
  * the document is the one relevant target of its query.

Writes to the workdir: topics.tsv and qrels.txt (when made), run.trec (top
`run_depth` per topic) and recall.json (macro and micro recall@k).
"""

import dataclasses
import json
import pathlib
import random
import re
from typing import Sequence

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.corpus.record import Document
from search_agent.corpus.sources import CorpusSpec
from search_agent.corpus.sources import read_corpus
from search_agent.search import analysis
from search_agent.search import service
from search_agent.search import trec
from search_agent.search.engine import SearchEngine

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Calibrate config (tpu_configs/search/calibrate.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string('workdir', None, 'Outputs (and a tiny index).')
flags.mark_flags_as_required(['config', 'workdir'])

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


def calibrate(c, workdir: pathlib.Path) -> dict:
  """Runs the calibration described in the module docstring."""
  workdir.mkdir(parents=True, exist_ok=True)
  engine = service.open_engine(c, workdir)
  try:
    if c.topics or c.qrels:
      topics, qrels = trec.read_topics(c.topics), trec.read_qrels(c.qrels)
    else:
      docs, _ = read_corpus(CorpusSpec(**c.corpus))
      topics, qrels = make_known_item_topics(
          list(docs),
          c.num_topics,
          seed=c.seed,
          min_words=c.min_query_words,
          max_words=c.max_query_words,
      )
      trec.write_topics(workdir / 'topics.tsv', topics)
      trec.write_qrels(workdir / 'qrels.txt', qrels)
    run, errors = run_topics(engine, topics, c.run_depth, c.batch_size)
  finally:
    engine.close()
  trec.write_run(workdir / 'run.trec', run, tag=c.run_tag)
  report = trec.evidence_recall(qrels, run, c.k)
  summary = {
      **{
          k: v
          for k, v in dataclasses.asdict(report).items()
          if k != 'per_query'
      },
      'topics': 'known_item' if not c.topics else str(c.topics),
      'rejected_queries': errors,
      'qrels_without_topic': sorted(set(qrels) - set(topics)),
  }
  (workdir / 'recall.json').write_text(json.dumps(summary, indent=2) + '\n')
  return summary


def main(argv):
  del argv
  s = calibrate(_CONFIG.value, pathlib.Path(_WORKDIR.value))
  print(
      f'evidence recall@{s["k"]}: macro {s["macro"]:.4f}, micro'
      f' {s["micro"]:.4f} ({s["num_found"]}/{s["num_targets"]} targets,'
      f' {s["num_queries"]} queries, {len(s["rejected_queries"])} rejected)'
  )


if __name__ == '__main__':
  app.run(main)
