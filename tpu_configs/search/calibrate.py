"""Retrieval fidelity: evidence recall@k against TREC qrels, TREC run export.

Usage: python -m index.calibrate --config=tpu_configs/search/calibrate.py
--workdir=DIR. With `topics` and `qrels` empty, known-item topics are made
from the served corpus (search_agent/search/calibration.py: a document's
first sentence, its title words and stopwords removed, must retrieve that
document; --config.generated=linked_pair asks for two linked documents). Give
--config.topics=q.tsv --config.qrels=qrels.txt to score your own (e.g. the
BrowseComp-Plus evidence qrels with their decrypted queries). The index,
engine and guard sections are those of serve.py (same defaults).

--config.mode=tune tunes the fusion (search_agent/search/tuning.py) on
`tune.tasks` (comma-separated task JSONL files, e.g. the tasks.*.jsonl of
`python -m search_agent.synthesis.run --config=tpu_configs/synthesis.py:tiny`;
their evidence pages are the gold) or, when empty, on the topics above, and
writes DIR/fusion.json and DIR/tune.json.

--config.mode=live --config.live.log=LOG.jsonl compares the local search
with a log of live search results (format: search_agent/search/live.py):
evidence recall of the local top k against the live targets
(DIR/live_recall.json) and, with `live.judge.kind` set, the blind
position-swapped pairwise snippet judge (DIR/judge.jsonl, the preference
rate with a Wilson interval in DIR/live_report.json).
"""

import ml_collections

from tpu_configs.search import serve


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the calibrate config; arg 'tiny' scores 20 topics on 500 docs."""
  c = serve.get_config(arg)
  for key in ('host', 'port', 'log_level', 'limits'):
    del c[key]
  c.topics = ''  # `qid<TAB>query` file; '' = make known-item topics
  c.qrels = ''  # TREC qrels file; '' = make known-item qrels
  # Topics made from the corpus when none are given: 'known_item' (one
  # document per query) or 'linked_pair' (a linked pair, both relevant).
  c.generated = 'known_item'
  c.num_topics = 200  # topics to make
  c.min_query_words = 4  # skip documents whose query would be shorter
  c.max_query_words = 12  # words kept from the first sentence
  c.pair_words_each = 5  # linked_pair: words from each document
  c.seed = 0  # which documents become topics
  c.k = 10  # recall cutoff (the seed quotes recall within the top ten)
  c.run_depth = 100  # results per topic written to the TREC run
  c.batch_size = 32  # topics per engine call
  c.run_tag = 'search_agent'
  # 'recall' (score the engine), 'tune' (the fusion), 'live' (a live log)
  c.mode = 'recall'
  c.tune = ml_collections.ConfigDict(
      dict(
          tasks='',  # task JSONL files, comma-separated; '' = topics above
          max_topics=0,  # 0 = all (the first n by id otherwise)
          min_gold=1,  # fewer gold pages: left out (2 = multi-hop only)
          fractions=(0.6, 0.2, 0.2),  # train, dev, test (by evidence group)
          split_seed=0,
          rounds=3,  # coordinate-ascent passes over the grid
          finalists=5,  # best train candidates re-scored on dev
          fusion_file='',  # where the chosen values go; '' = DIR/fusion.json
          grid=ml_collections.ConfigDict(
              dict(
                  rrf_k=(1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0),
                  doc=(0.5, 0.75, 1.0, 1.5),
                  passage=(0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
                  title=(0.0, 0.1, 0.25, 0.5, 0.75, 1.0),
                  depth_factor=(1, 2, 3, 5, 10),
                  # BM25 per view, every (k1, b) pair, after the fusion;
                  # only --config.backend=lucene applies them (tantivy
                  # fixes 1.2/0.75). () = not tuned.
                  bm25_k1=(0.6, 0.9, 1.2, 1.5, 2.0),
                  bm25_b=(0.3, 0.5, 0.75, 0.9),
              )
          ),
      )
  )
  judge = ml_collections.ConfigDict()
  judge.kind = ''  # '' (no judge) | 'openai' | 'scripted' (harness tests)
  judge.name = ''
  judge.script = ()  # kind 'scripted': replies by assistant turn
  judge.openai = ml_collections.ConfigDict(
      dict(base_url='', model='', api_key_env='', timeout_s=120.0,
           max_concurrency=16)
  )  # fmt: skip
  c.live = ml_collections.ConfigDict(
      dict(
          log='',  # the live-results JSONL
          corpus_urls=True,  # also report recall over targets in the corpus
          max_pairs=500,  # matched pairs judged (the seed: 500)
          pair_seed=0,  # which pairs, when there are more
          concurrency=8,  # pairs judged at once
          judge=judge,
      )
  )
  if arg == 'tiny':
    c.num_topics = 20
  return c
