"""Real SFT test data: WebDancer trajectories, shortened for 512-token rows.

The chatml user turn repeats the tool descriptions (~600 tokens): only the
question is kept (agent.chatml.extract_question). Rows are fitted at whole
turns (a turn longer than its row is dropped, not cut), and WebDancer turns
reason for ~1,400 tokens, so assistant turns keep their tool calls and
answers but not their reasoning (`REASONING_CHARS`), and observations their
first `OBSERVATION_CHARS`: 23 of 24 first turns then fit 512-token rows. The
text itself is the real data.
"""

import os

# XLA:CPU's concurrency-optimized scheduler can deadlock collectives of 8
# simulated devices on 2 cores (threads blocked in different rendezvous);
# the sequential schedule avoids it. Set before the JAX backend starts.
_FLAG = '--xla_cpu_enable_concurrency_optimized_scheduler=false'
if _FLAG not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = (
      os.environ.get('XLA_FLAGS', '') + ' ' + _FLAG
  ).strip()


import dataclasses
import json

import pytest

from search_agent.agent import chatml
from search_agent.chat import tokenizer as tokenizer_lib

REASONING_CHARS = 0
OBSERVATION_CHARS = 1500


def _shorten(m):
  if m.role == 'assistant' and m.reasoning:
    return dataclasses.replace(m, reasoning=m.reasoning[:REASONING_CHARS])
  if m.role == 'tool':
    return dataclasses.replace(m, content=m.content[:OBSERVATION_CHARS])
  return m


def write_short_trajectories(src, out_path, n):
  trajs, errors = chatml.import_chatml_file(src)
  assert not errors
  with open(out_path, 'w', encoding='utf-8') as f:
    for t in trajs[:n]:
      msgs = [_shorten(m) for m in t.messages]
      first_user = next(i for i, m in enumerate(msgs) if m.role == 'user')
      msgs[first_user] = dataclasses.replace(
          msgs[first_user], content=chatml.extract_question(msgs[1].content)
      )
      t = dataclasses.replace(t, messages=tuple(msgs))
      f.write(json.dumps(t.to_json()) + '\n')
  return str(out_path)


@pytest.fixture(scope='session')
def sft_jsonl(tmp_path_factory, shared_data):
  src = shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl'
  out = tmp_path_factory.mktemp('sft') / 'train.jsonl'
  return write_short_trajectories(src, out, 24)


@pytest.fixture(scope='session')
def tiny_tokenizer_dir(tmp_path_factory, shared_data):
  out = tmp_path_factory.mktemp('tok')
  with open(shared_data / 'corpus' / '2wikimultihopqa_corpus.json') as f:
    docs = json.load(f)
  tokenizer_lib.train_tiny_tokenizer(docs, out, 4096)
  return str(out)
