r"""Evidence recall@k of task questions on several indexes, side by side.

  PYTHONPATH=. .venv/bin/python tests/bench/heldout_recall.py \
      --tasks=RUN/tasks/tasks.heldout.jsonl --index=RUN/index/index \
      --index=CLUSTER_BUILD/index [--k=10] [--limit=100] [--snippet_words=24]

Each `--index` is anything `search_agent.search.locations.open_engine` opens
(a tantivy directory, a cluster build's directory, a cluster location),
searched with the engine the pipeline's environment uses (default fusion,
`--snippet_words` as the pipeline's `env.snippet_words`). The topics are
the tasks' questions, their gold the evidence pages
(`calibration.topics_from_tasks`, as `index.calibrate`'s tune mode reads
tasks). Prints one JSON object: per index macro and micro recall@k, and
per pair of indexes how many top-k lists differ and the recall difference.
"""

import json

from absl import app
from absl import flags

from search_agent.corpus import twowiki
from search_agent.search import calibration
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import trec

_TASKS = flags.DEFINE_list('tasks', None, 'Task JSONL files.')
_INDEX = flags.DEFINE_multi_string('index', None, 'Indexes to compare.')
_K = flags.DEFINE_integer('k', 10, 'Recall cutoff.')
_LIMIT = flags.DEFINE_integer('limit', 0, 'First N topics; 0 = all.')
_WORDS = flags.DEFINE_integer('snippet_words', 24, 'As env.snippet_words.')
flags.mark_flags_as_required(['tasks', 'index'])


def main(argv):
  del argv
  docs = twowiki.read_2wiki()
  topics, qrels, _ = calibration.topics_from_tasks(_TASKS.value, docs)
  if _LIMIT.value:
    topics = dict(list(topics.items())[: _LIMIT.value])
  qrels = {q: qrels[q] for q in topics}
  config = engine_lib.snippet_words_config(_WORDS.value)
  runs, out = {}, {'topics': len(topics), 'k': _K.value, 'indexes': {}}
  for index in _INDEX.value:
    engine = locations.open_engine(index, config)
    try:
      run, errors = calibration.run_topics(engine, topics, _K.value)
    finally:
      engine.close()
    report = trec.evidence_recall(qrels, run, _K.value)
    runs[index] = run
    out['indexes'][index] = {
        'backend': 'cluster' if locations.resolve(index) else 'tantivy',
        'macro': round(report.macro, 4),
        'micro': round(report.micro, 4),
        'found': report.num_found,
        'targets': report.num_targets,
        'errors': len(errors),
    }
  names = list(runs)
  out['pairs'] = []
  for i, a in enumerate(names):
    for b in names[i + 1 :]:
      ids = lambda r, q: [d for d, _ in r[q][: _K.value]]  # pylint: disable=cell-var-from-loop
      differ = sum(ids(runs[a], q) != ids(runs[b], q) for q in topics)
      out['pairs'].append(
          {
              'a': a,
              'b': b,
              'differing_lists': differ,
              'macro_diff': round(
                  out['indexes'][a]['macro'] - out['indexes'][b]['macro'], 4
              ),
          }
      )
  print(json.dumps(out, indent=1))


if __name__ == '__main__':
  app.run(main)
