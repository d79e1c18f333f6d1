"""Pretraining mode: corpus text with loss on every token, then SFT from it."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.model import families
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import inputs as inputs_lib
from search_agent.train.sft import metrics as metrics_lib
from search_agent.train.sft import pretrain_data
from search_agent.train.sft import trainer

ONE = jax.devices()[:1]


@pytest.fixture(scope='module')
def corpus(shared_data):
  return str(shared_data / 'corpus' / '2wikimultihopqa_corpus.json')


def test_corpus_texts_then_synthetic_copy_and_recall(corpus):
  src = pretrain_data.CorpusTexts(corpus, (0, 100), synthetic_fraction=0.2)
  assert len(src) == 125  # 100 documents + 25 synthetic (a fifth)
  with open(corpus, encoding='utf-8') as f:
    first = json.load(f)[0]
  assert src[0] == f"{first['title']}\n{first['text']}"
  copy, recall = src[100], src[101]
  names = copy.split('\n')[0].removeprefix('copy: ')
  assert copy == f'copy: {names}\nagain: {names}' and names.count('; ') == 2
  facts, query = recall.split('\n')
  assert query.removeprefix('recall ') in facts.removeprefix('facts: ')
  again = pretrain_data.CorpusTexts(corpus, (0, 100), synthetic_fraction=0.2)
  assert [again[i] for i in range(100, 125)] == [
      src[i] for i in range(100, 125)
  ]
  with pytest.raises(data_lib.DataError, match='synthetic_fraction'):
    pretrain_data.CorpusTexts(corpus, synthetic_fraction=1.0)
  with pytest.raises(data_lib.DataError, match="'copies'"):
    pretrain_data.CorpusTexts(corpus, kinds=('copy', 'copies'))


def test_shuffle_sequences_repeat_words_of_the_documents(corpus):
  src = pretrain_data.CorpusTexts(
      corpus, (0, 100), synthetic_fraction=0.5, kinds=('shuffle',)
  )
  with open(corpus, encoding='utf-8') as f:
    vocab = {w for d in json.load(f)[:100] for w in d['text'].split()}
  for k in (100, 101):
    first, second = src[k].split('\n')
    words = first.removeprefix('words: ')
    assert second == f'again: {words}' and len(words.split()) == 12
    assert set(words.split()) <= vocab
  assert src[100] != src[101]


def test_names_sequences_repeat_title_words_in_no_title_order(corpus):
  src = pretrain_data.CorpusTexts(
      corpus, (0, 100), synthetic_fraction=0.5, kinds=('names', 'copy')
  )
  titles = src.titles
  vocab = {w for t in titles for w in t.split()}
  first, second = src[100].split('\n')
  words = first.removeprefix('names: ')
  assert second == f'again: {words}' and len(words.split()) == 16
  assert set(words.split()) <= vocab
  assert not any(t in words for t in titles if len(t.split()) > 1)
  assert src[101].startswith('copy: ')  # kinds alternate


def test_copy_probe_loss_is_on_the_repeated_names_only(
    corpus, tiny_tokenizer_dir
):
  tok = tokenizer_lib.load_tokenizer(str(tiny_tokenizer_dir))
  titles = pretrain_data.CorpusTexts(corpus, (200, 220)).titles
  texts = pretrain_data.copy_probe_texts(titles, 4)
  assert texts == pretrain_data.copy_probe_texts(titles, 4)  # fixed draws
  (ex,) = pretrain_data.copy_probe_fn(tok, 256)(texts[0])
  scored = ex['targets'][ex['loss_mask'] == 1]
  assert tok.decode(scored.tolist()).strip() == texts[0]
  assert ex['loss_mask'][0] == 0 and ex['loss_mask'][-1] == 1
  with pytest.raises(data_lib.DataError, match='seq_len'):
    pretrain_data.copy_probe_fn(tok, 4)(texts[0])


def test_windows_target_every_token_once():
  ids = list(range(10))
  ex = pretrain_data.windows(ids, seq_len=4)
  targets = np.concatenate([e['targets'] for e in ex]).tolist()
  assert targets == ids[1:]  # each token after the first, once
  assert [e['inputs'].tolist() for e in ex] == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
  assert all(e['loss_mask'].all() for e in ex)
  assert pretrain_data.windows([7], 4) == []


def _cfg(corpus, tokenizer_dir, **kw):
  model = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=256, logits_chunk=128
  )
  base = dict(
      model=model,
      layout=families.layout_preset('fsdp'),
      optimizer=optim.OptimizerConfig(),
      schedule=schedule_lib.ScheduleConfig(
          peak=1e-2, minimum=1e-3, warmup_steps=1, total_steps=6
      ),
      data=data_lib.DataConfig(
          mode='pretrain',
          train_path=corpus,
          val_path=corpus,
          train_lines=(0, 200),
          val_lines=(200, 220),
          seq_len=256,
          micro_batch=2,
          micro_steps=1,
          synthetic_fraction=0.2,
          num_epochs=None,
      ),
      checkpoint=checkpoint_lib.CheckpointConfig(every=3, keep=2),
      tokenizer_path='',
      tokenizer_corpus=corpus,
      total_updates=6,
      eval_every=3,
  )
  base.update(kw)
  return sft_config.SFTConfig(**base)


@pytest.mark.maxtext
@pytest.mark.slow
def test_pretrain_then_sft_from_its_checkpoint(
    tmp_path, corpus, sft_jsonl, tiny_tokenizer_dir
):
  del tiny_tokenizer_dir
  pre = tmp_path / 'pretrain'
  state = trainer.train(_cfg(corpus, ''), str(pre), devices=ONE)
  rows = metrics_lib.read_metrics(str(pre / 'metrics.jsonl'))
  assert [r['step'] for r in rows] == list(range(1, 7))
  # Every real token is a target (~150-token documents in 256-token rows).
  assert all(r['tokens'] > 0.6 * 2 * 256 for r in rows)
  assert rows[-1]['nll'] < rows[0]['nll']
  val = metrics_lib.read_metrics(str(pre / 'metrics.jsonl'), 'val')
  assert [r['step'] for r in val] == [3, 6]
  # The copy probe: untrained, a repeated name costs nats per token.
  assert all(np.isfinite(r['copy_nll']) and r['copy_nll'] > 1.0 for r in val)

  sft = _cfg(
      corpus,
      '',
      init_from=str(pre),
      data=data_lib.DataConfig(
          train_path=sft_jsonl, train_lines=(0, 8), seq_len=256
      ),
      total_updates=1,
  )
  # SFT reads the pretraining run's tokenizer, not a new one.
  inputs = inputs_lib.Inputs(sft, str(tmp_path / 'sft'))
  pre_tok = tokenizer_lib.load_tokenizer(str(pre / 'tokenizer'))
  assert inputs.tokenizer.hf.to_str() == pre_tok.hf.to_str()
  assert not (tmp_path / 'sft' / 'tokenizer').exists()
  params, step = inputs_lib.init_params(str(pre), state['params'])
  assert step == 6
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(state['params'])):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

  seen = {}
  sft = dataclasses.replace(
      sft,
      data=dataclasses.replace(sft.data, seq_len=1024),
      model=dataclasses.replace(sft.model, max_target_length=1024),
  )
  trainer.train(
      sft,
      str(tmp_path / 'sft'),
      devices=ONE,
      on_update=lambda s, m: seen.setdefault(s, m),
  )
  assert 1 in seen and np.isfinite(seen[1]['nll'])


def test_init_from_a_workdir_without_checkpoints_fails(tmp_path):
  with pytest.raises(inputs_lib.InitError, match='no checkpoints'):
    inputs_lib.init_params(str(tmp_path), {})


def test_pretrain_tiny_config_converts(repo_root):
  import importlib.util  # pylint: disable=g-import-not-at-top

  spec = importlib.util.spec_from_file_location(
      'sft_cfg', repo_root / 'tpu_configs' / 'sft.py'
  )
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  cfg = sft_config.from_config_dict(mod.get_config('pretrain_tiny'))
  assert cfg.data.mode == 'pretrain' and cfg.data.synthetic_fraction == 0.2
  assert cfg.data.train_path.endswith('2wikimultihopqa_corpus.json')
  assert cfg.data.seq_len == cfg.model.max_target_length == 512
  tiny = sft_config.from_config_dict(mod.get_config('tiny'))
  assert tiny.data.mode == 'sft' and tiny.init_from == ''
  assert tiny.data.seq_len == tiny.model.max_target_length == 12288
  assert tiny.model.remat_policy == 'full'
  with pytest.raises(ValueError, match='variant'):
    mod.get_config('huge')
