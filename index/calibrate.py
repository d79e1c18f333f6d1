r"""Retrieval fidelity: evidence recall@k of the fused search, TREC run export.

  python -m index.calibrate --config=tpu_configs/search/calibrate.py:tiny \
      --workdir=/tmp/cal

Scores the engine of a serve config against TREC topics and qrels, or, when
none are given, against known-item or linked-pair topics made from the
corpus (search_agent/search/calibration.py says how). Writes to the workdir:
topics.tsv and qrels.txt (when made), run.trec (top `run_depth` per topic)
and recall.json (macro and micro evidence recall@k, trec.py's formulas).
"""

import dataclasses
import json
import pathlib

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.corpus.sources import CorpusSpec
from search_agent.corpus.sources import read_corpus
from search_agent.search import calibration
from search_agent.search import service
from search_agent.search import trec
from search_agent.search.backend import BackendError

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Calibrate config (tpu_configs/search/calibrate.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string('workdir', None, 'Outputs (and a tiny index).')
flags.mark_flags_as_required(['config', 'workdir'])


def _topics_and_qrels(c, workdir: pathlib.Path):
  if c.topics or c.qrels:
    return trec.read_topics(c.topics), trec.read_qrels(c.qrels)
  docs = list(read_corpus(CorpusSpec(**c.corpus))[0])
  if c.generated == 'known_item':
    topics, qrels = calibration.make_known_item_topics(
        docs,
        c.num_topics,
        seed=c.seed,
        min_words=c.min_query_words,
        max_words=c.max_query_words,
    )
  elif c.generated == 'linked_pair':
    topics, qrels = calibration.make_linked_pair_topics(
        docs, c.num_topics, seed=c.seed, words_each=c.pair_words_each
    )
  else:
    raise ValueError(
        f"generated must be 'known_item' or 'linked_pair': {c.generated!r}"
    )
  trec.write_topics(workdir / 'topics.tsv', topics)
  trec.write_qrels(workdir / 'qrels.txt', qrels)
  return topics, qrels


def main(argv):
  del argv
  c, workdir = _CONFIG.value, pathlib.Path(_WORKDIR.value)
  workdir.mkdir(parents=True, exist_ok=True)
  try:
    engine = service.open_engine(c, workdir)
  except BackendError as e:  # a fresh workdir: say which index and how
    raise SystemExit(
        f'index.calibrate: {e}; to build it: python -m index.build'
        f' --config=tpu_configs/search/build.py --workdir={workdir} (or pass'
        ' --config.build_if_missing=True, or --config.index_dir=IDX)'
    ) from e
  try:
    topics, qrels = _topics_and_qrels(c, workdir)
    run, rejected = calibration.run_topics(
        engine, topics, c.run_depth, c.batch_size
    )
  finally:
    engine.close()
  trec.write_run(workdir / 'run.trec', run, tag=c.run_tag)
  report = dataclasses.asdict(trec.evidence_recall(qrels, run, c.k))
  del report['per_query']
  report['topics'] = c.topics or c.generated
  report['rejected_queries'] = rejected
  report['qrels_without_topic'] = sorted(set(qrels) - set(topics))
  (workdir / 'recall.json').write_text(json.dumps(report, indent=2) + '\n')
  print(
      f'evidence recall@{c.k}: macro {report["macro"]:.4f}, micro'
      f' {report["micro"]:.4f} ({report["num_found"]}/'
      f'{report["num_targets"]} targets, {report["num_queries"]} queries,'
      f' {len(rejected)} rejected)'
  )


if __name__ == '__main__':
  app.run(main)
