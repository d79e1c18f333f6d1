"""Rehearsal: pretraining texts mixed into SFT's training elements."""

import dataclasses

import jax
import numpy as np
import pytest

from search_agent.model import families
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import inputs as inputs_lib
from search_agent.train.sft import metrics as metrics_lib
from search_agent.train.sft import rehearsal
from search_agent.train.sft import trainer


@pytest.fixture(scope='module')
def corpus(shared_data):
  return str(shared_data / 'corpus' / '2wikimultihopqa_corpus.json')


def test_mixed_source_holds_the_trajectories_then_a_seeded_draw_of_texts():
  trajectories = [('traj', i) for i in range(9)]
  texts = [f'text {i}' for i in range(100)]
  mixed = rehearsal.Mixed(trajectories, texts, 0.25, seed=3)
  assert len(mixed) == 12 and mixed.rehearsed == 3  # 9 * 0.25 / 0.75
  assert [mixed[i] for i in range(9)] == trajectories
  drawn = [mixed[i] for i in range(9, 12)]
  assert all(t in texts for t in drawn) and len(set(drawn)) == 3
  again = rehearsal.Mixed(trajectories, texts, 0.25, seed=3)
  assert [again[i] for i in range(12)] == [mixed[i] for i in range(12)]
  other = rehearsal.Mixed(trajectories, texts, 0.25, seed=4)
  assert [other[i] for i in range(9, 12)] != drawn
  # More texts wanted than exist: drawn with replacement.
  assert len(rehearsal.Mixed(trajectories, texts[:2], 0.5, seed=0)) == 18
  with pytest.raises(data_lib.DataError, match=r'\(0, 1\)'):
    rehearsal.Mixed(trajectories, texts, 1.0, seed=0)


def test_examples_go_to_the_pretraining_or_the_trajectory_function():
  fn = rehearsal.examples_fn(lambda t: [('sft', t)], lambda s: [('text', s)])
  assert fn('words: a b\nagain: a b') == [('text', 'words: a b\nagain: a b')]
  assert fn({'messages': []}) == [('sft', {'messages': []})]


def _cfg(corpus, train, tokenizer_dir, **data):
  model = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=1024, logits_chunk=128
  )
  return sft_config.SFTConfig(
      model=model,
      layout=families.layout_preset('fsdp'),
      optimizer=optim.OptimizerConfig(),
      schedule=schedule_lib.ScheduleConfig(
          peak=1e-2, minimum=1e-3, warmup_steps=1, total_steps=2
      ),
      data=data_lib.DataConfig(
          **{
              **dict(
                  train_path=train,
                  val_path=train,
                  train_lines=(0, 8),
                  val_lines=(8, 12),
                  seq_len=1024,
                  num_epochs=None,
                  synthetic_fraction=0.95,
                  synthetic_kinds=('shuffle',),
              ),
              **data,
          }
      ),
      checkpoint=checkpoint_lib.CheckpointConfig(every=2, keep=1),
      tokenizer_path=tokenizer_dir,
      total_updates=2,
      eval_every=2,
  )


def _rehearsing(corpus, sft_jsonl, tokenizer_dir):
  """SFT on the trajectories, half its elements the corpus's texts."""
  return _cfg(
      corpus,
      sft_jsonl,
      tokenizer_dir,
      rehearsal_path=corpus,
      rehearsal_fraction=0.5,
  )


def test_sft_inputs_mix_rehearsal_texts_with_every_token_a_target(
    tmp_path, corpus, sft_jsonl, tiny_tokenizer_dir
):
  cfg = _rehearsing(corpus, sft_jsonl, tiny_tokenizer_dir)
  inputs = inputs_lib.Inputs(cfg, str(tmp_path))
  source = inputs.train_source()
  assert len(source) == 16  # 8 trajectories + 8 texts
  texts = [source[i] for i in range(8, 16)]
  assert all(isinstance(t, str) for t in texts)
  assert not any(isinstance(source[i], str) for i in range(8))
  # 95% of the rehearsal source is shuffle sequences: most draws are.
  assert sum(t.startswith('words: ') for t in texts) >= 6
  for t in texts:
    (ex,) = inputs.examples(t)
    assert ex['loss_mask'].all()  # every token a target, as pretraining
    ids = inputs.tokenizer.encode(t) + [inputs.tokenizer.eos_id]
    assert ex['targets'].tolist() == ids[1:]
  traj = inputs.examples(source[0])
  assert traj and not all(e['loss_mask'].all() for e in traj)
  # The copy probe reads the rehearsal corpus's titles: the pretraining's.
  pretraining = inputs_lib.Inputs(
      _cfg(
          corpus,
          corpus,
          tiny_tokenizer_dir,
          mode='pretrain',
          train_lines=(0, 0),
          val_lines=(0, 0),
      ),
      str(tmp_path / 'pretrain'),
  )
  probe, want = list(inputs.copy_probe()), list(pretraining.copy_probe())
  assert len(probe) == len(want) > 0
  for got, ref in zip(probe, want):
    for key in ref:
      np.testing.assert_array_equal(got[key], ref[key])
  plain = inputs_lib.Inputs(
      _cfg(corpus, sft_jsonl, tiny_tokenizer_dir), str(tmp_path / 'plain')
  )
  assert len(plain.train_source()) == 8 and plain.copy_probe() is None


@pytest.mark.parametrize(
    'data, match',
    [
        (dict(rehearsal_fraction=0.5), 'needs data.rehearsal_path'),
        (dict(rehearsal_fraction=1.0, rehearsal_path='x'), r'\[0, 1\)'),
        (
            dict(rehearsal_fraction=0.5, rehearsal_path='x', mode='pretrain'),
            'for SFT mode',
        ),
    ],
)
def test_bad_rehearsal_settings_say_what_is_wrong(
    tmp_path, corpus, sft_jsonl, tiny_tokenizer_dir, data, match
):
  with pytest.raises(data_lib.DataError, match=match):
    inputs_lib.Inputs(
        _cfg(corpus, sft_jsonl, tiny_tokenizer_dir, **data), str(tmp_path)
    )


@pytest.mark.maxtext
@pytest.mark.slow
def test_sft_with_rehearsal_trains_and_reports_the_copy_probe(
    tmp_path, corpus, sft_jsonl, tiny_tokenizer_dir
):
  cfg = _rehearsing(corpus, sft_jsonl, tiny_tokenizer_dir)
  trainer.train(cfg, str(tmp_path), devices=jax.devices()[:1])
  rows = metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'))
  assert [r['step'] for r in rows] == [1, 2]
  assert all(np.isfinite(r['nll']) for r in rows)
  (val,) = metrics_lib.read_metrics(str(tmp_path / 'metrics.jsonl'), 'val')
  assert np.isfinite(val['nll']) and val['copy_nll'] > 1.0
