r"""Trains the tiny byte-level BPE every model stage of a pipeline shares.

  python -m search_agent.pipeline.train_tokenizer --workdir=DIR \
      [--corpus=CORPUS.json] [--vocab_size=4096]

Writes DIR/tokenizer.json and DIR/tokenizer_config.json (the format
`chat.tokenizer.load_tokenizer` reads). Pretraining, SFT, eval and RL all
point their tokenizer at DIR, so their token ids agree.
"""

import json

from absl import app
from absl import flags

from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.corpus import twowiki

_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_CORPUS = flags.DEFINE_string(
    'corpus', str(twowiki.BUNDLED_2WIKI), '[{title, text}] JSON corpus.'
)
_VOCAB = flags.DEFINE_integer('vocab_size', 4096, 'Ids, chat tokens included.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  with open(_CORPUS.value, encoding='utf-8') as f:
    docs = json.load(f)
  tok = tokenizer_lib.train_tiny_tokenizer(docs, _WORKDIR.value, _VOCAB.value)
  print(f'tokenizer: {tok.vocab_size} ids from {len(docs)} documents')


if __name__ == '__main__':
  flags.mark_flags_as_required(['workdir'])
  app.run(main)
