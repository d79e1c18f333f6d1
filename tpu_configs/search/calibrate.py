"""Retrieval fidelity: evidence recall@k against TREC qrels, TREC run export.

Usage: python -m index.calibrate --config=tpu_configs/search/calibrate.py
--workdir=DIR. With `topics` and `qrels` empty, known-item topics are made
from the served corpus (search_agent/search/calibration.py: a document's
first sentence, its title words and stopwords removed, must retrieve that
document; --config.generated=linked_pair asks for two linked documents). Give
--config.topics=q.tsv --config.qrels=qrels.txt to score your own (e.g. the
BrowseComp-Plus evidence qrels with their decrypted queries). The index,
engine and guard sections are those of serve.py (same defaults).
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
  if arg == 'tiny':
    c.num_topics = 20
  return c
