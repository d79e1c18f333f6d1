"""Supervised-token coverage on the real WebDancer file, real tiny tokenizer.

Rows used to be cut at `seq_len` (99,082 of 334,640 supervised tokens kept at
2048, every answer lost). Now a turn trains whole, with exactly its rollout
context, or is dropped and counted; the tiny config's 12,288-token rows keep
over 95% of the supervised tokens.
"""

import numpy as np
import pytest

from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.train import data as data_lib
from search_agent.train.sft import coverage


@pytest.fixture(scope='module')
def webdancer(shared_data, tiny_tokenizer_dir):
  path = str(shared_data / 'trajectories' / 'webdancer_sample_traj.jsonl')
  tok = tokenizer_lib.load_tokenizer(tiny_tokenizer_dir)
  render = data_lib.make_render_fn(tok, 'sliding_window', 5, 'chatml')
  src = data_lib.JsonlTrajectories(path, (0, 190), 'chatml')
  return [render(src[i]) for i in range(len(src))]


def _coverage(rendered, seq_len):
  cov = data_lib.Coverage()
  examples = [
      e for r in rendered for e in data_lib.to_examples(r, seq_len, cov)
  ]
  return cov, examples


def test_tiny_rows_keep_the_answers(webdancer):
  short, _ = _coverage(webdancer, 2048)
  cov, examples = _coverage(webdancer, 8192)
  assert cov.supervised_tokens == short.supervised_tokens == 334_640
  # At 2048 no answer fits with its context (the old cut kept 29.6% of
  # tokens, all of them partial turns, no answer whole).
  assert short.kept_final_turns == 0
  d = cov.as_dict()
  assert d['supervised_token_coverage'] > 0.89
  assert cov.kept_final_turns >= 161 and cov.final_turns == 190
  # Each kept token is trained once: the examples hold exactly the kept ones.
  assert sum(int(e['loss_mask'].sum()) for e in examples) == cov.kept_tokens
  assert all(len(e['inputs']) <= 8192 for e in examples)


def test_the_tiny_config_keeps_95_percent(webdancer, repo_root):
  """tpu_configs/sft.py:tiny's rows keep >= 95% of the supervised tokens
  (one ~3,500-token observation and its answer did not fit 8,192)."""
  import importlib.util  # pylint: disable=g-import-not-at-top

  spec = importlib.util.spec_from_file_location(
      'sft_cfg', repo_root / 'tpu_configs' / 'sft.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  seq_len = mod.get_config('tiny').data.seq_len
  cov, _ = _coverage(webdancer, seq_len)
  assert cov.as_dict()['supervised_token_coverage'] >= 0.95
  assert cov.kept_final_turns >= 186


def test_kept_rows_are_prefixes_ending_on_whole_turns(webdancer):
  for views in webdancer[:40]:
    exs = data_lib.to_examples(views, 8192)
    if len(exs) != len(views):
      continue  # a view with nothing that fits
    for (ids, mask), e in zip(views, exs):
      n = len(e['inputs']) + 1
      assert list(ids[:n]) == e['inputs'].tolist() + e['targets'][-1:].tolist()
      np.testing.assert_array_equal(e['loss_mask'], np.asarray(mask[1:n]))
      assert e['loss_mask'][-1] == 1  # ends on a supervised turn's last token
      # The cut falls between turns, never inside one.
      assert n == len(ids) or mask[n] == 0


def test_report_record_names_the_coverage():
  cov = data_lib.Coverage(supervised_tokens=10, kept_tokens=7, turns=2)
  report = {'seq_len': 8, 'mode': 'sft', 'train': cov.as_dict()}
  record = coverage.metrics_record(report)
  assert record['supervised_token_coverage'] == pytest.approx(0.7)
  assert 'supervised_token_coverage 0.7000' in coverage.format_report(report)
