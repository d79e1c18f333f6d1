"""SFT configs: `--config=tpu_configs/sft.py:tiny` (CPU) or `:recipe`.

A variant may add `,pod` (e.g. `:tiny,pod`): one packed row per device of an
8-device batch axis (`micro_batch=8`) from 8 loader streams (`data.shards`),
so each of several processes loads only its own rows; `python -m
launch.local --config=tpu_configs/launch/sft.py:tiny --processes=2` runs it.

'recipe' is open-recipe.md's SFT table: Qwen3-30B-A3B-class MoE, 262,144-token
packing, 64 packed rows per update (8 microbatches of 8), distributed Muon
(momentum 0.9, spectral scaling multiplier 0.2, Nesterov off, weight decay
0.1), lr 5e-5 peak / 1e-6 min, 51 warmup updates, cosine through update 507,
TP=2 CP=8 EP=8, sequence packing and full activation recomputation. 'tiny'
trains the tiny MoE on 190 of the 200 real WebDancer trajectories (10 held
out) with a tokenizer trained on the bundled corpus, on a 2-core CPU, in
12,288-token rows; turns that do not fit are dropped and counted, never cut
(`python -m search_agent.train.sft.data_report` gives coverage 0.987).

'pretrain_tiny' pretrains the tiny MoE from scratch on the bundled 2Wiki
corpus (next-token loss on every token, a fifth synthetic copy/recall
sequences; `data.mode='pretrain'`); SFT then starts from it with
`--config.init_from=<pretrain workdir>` (its parameters and tokenizer).
"""

import os

import ml_collections

from search_agent.model import families

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHARED = os.path.join(os.path.dirname(_REPO), 'shared', 'data')
VARIANTS = ('tiny', 'recipe', 'pretrain_tiny')
OPTIONS = ('pod',)
# The bundled 2Wiki corpus (in the repository, so a fresh checkout runs).
_CORPUS = os.path.join(
    _REPO, 'search_agent', 'corpus', 'data', '2wikimultihopqa_corpus.json'
)


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """The config of `arg`: a variant, optionally followed by ',pod'."""
  variant, *options = (arg or 'recipe').split(',')
  if variant not in VARIANTS:
    raise ValueError(f'sft config variant {variant!r}: use one of {VARIANTS}')
  unknown = set(options) - set(OPTIONS)
  if unknown:
    raise ValueError(f'sft config options {sorted(unknown)}: use {OPTIONS}')
  c = _variant(variant)
  if 'pod' in options:
    _pod(c)
  return c


def _pod(c: ml_collections.ConfigDict) -> None:
  """One row per device of an 8-way batch axis, from 8 loader streams."""
  rows = c.data.micro_batch * c.data.micro_steps
  c.data.micro_batch = 8
  c.data.micro_steps = max(rows // 8, 1)
  c.data.shards = 8


def _variant(variant: str) -> ml_collections.ConfigDict:
  if variant == 'pretrain_tiny':
    return _pretrain_tiny()
  tiny = variant == 'tiny'
  c = ml_collections.ConfigDict()
  # Model (search_agent.model.config.ModelConfig fields).
  c.model = families.as_dict(
      families.model_preset('tiny' if tiny else 'qwen3-30b-a3b')
  )
  if tiny:
    # WebDancer turns carry ~3.5k-token observations: rows of 12,288 keep
    # over 95% of the supervised tokens (data_report; docs/decisions.md).
    c.model.max_target_length = 12288
    # Attention in 128-position blocks that skip pairs with no shared
    # segment, logits chunks kept for the backward: the same loss, a faster
    # CPU update (docs/experiments/training-throughput.md).
    c.model.attention_block = 128
    c.model.logits_remat = False
  # Parallel layout (search_agent.model.mesh.Parallelism fields).
  c.layout = families.as_dict(
      families.layout_preset('fsdp' if tiny else 'recipe_tp2_cp8_ep8')
  )
  # Muon as in the recipe; 'adamw' is the alternative.
  c.optimizer = ml_collections.ConfigDict(
      dict(
          name='muon',
          momentum=0.9,
          nesterov=False,
          weight_decay=0.1,
          spectral_scale=0.2,
          adam_b2=0.95,
          adam_eps=1e-8,
          grad_clip_norm=0.0,
          # Regexes of frozen parameters, e.g. ['MoeBlock_0/gate/'].
          frozen=[],
      )
  )
  # Warmup + cosine over optimizer updates (search_agent/train/schedule.py).
  c.schedule = ml_collections.ConfigDict(
      dict(
          kind='warmup_cosine',
          peak=2e-2 if tiny else 5e-5,
          minimum=1e-3 if tiny else 1e-6,
          warmup_steps=2 if tiny else 51,
          total_steps=20 if tiny else 507,
          decay_steps=0,  # 'warmup_stable_decay' only
      )
  )
  # Data: trajectory JSONL (or chatml) -> context policy -> renderer -> packing.
  webdancer = os.path.join(
      _SHARED, 'trajectories', 'webdancer_sample_traj.jsonl'
  )
  c.data = ml_collections.ConfigDict(
      dict(
          train_path=webdancer if tiny else '/data/sft/train.jsonl',
          val_path=webdancer if tiny else '/data/sft/val.jsonl',
          format='chatml' if tiny else 'trajectory',
          train_lines=(0, 190) if tiny else (0, 0),
          val_lines=(190, 200) if tiny else (0, 0),
          seq_len=c.model.max_target_length,
          # The recipe's 64 packed rows per update: 8 per microbatch, one
          # per slot of the 8-way batch axis (expert=8) of its layout.
          micro_batch=1 if tiny else 8,
          micro_steps=1 if tiny else 8,
          num_packing_bins=4 if tiny else 16,
          seed=0,
          num_epochs=1,
          # 'sft' (trajectories) or 'pretrain' (corpus text, every token).
          mode='sft',
          synthetic_fraction=0.0,
          # Pretrain: synthetic kinds in turn ('copy', 'recall', 'shuffle',
          # 'names').
          synthetic_kinds=('copy', 'recall'),
          # SFT: this share of the training elements are pretraining texts
          # of the `[{title, text}]` corpus at rehearsal_path (with the
          # synthetic settings above; train/sft/rehearsal.py). 0 = none.
          rehearsal_path='',
          rehearsal_fraction=0.0,
          # The output head and loss only at supervised positions, gathered
          # per row to a multiple of this (train/data.py score_index); the
          # same loss, fewer head FLOPs (docs/experiments/
          # training-throughput.md). 0 = every position.
          loss_positions_multiple=128 if tiny else 0,
          # Loader streams; a host loads only the streams whose rows its
          # devices hold (train/data.py). The recipe: one per batch slot.
          shards=1 if tiny else 8,
      )
  )
  c.checkpoint = ml_collections.ConfigDict(
      dict(every=10 if tiny else 50, keep=3)
  )
  # '' trains the tiny tokenizer on tokenizer_corpus into <workdir>/tokenizer.
  # The recipe: the HF checkpoint directory holding tokenizer.json.
  c.tokenizer_path = '' if tiny else '/models/qwen3-30b-a3b'
  c.tokenizer_corpus = os.path.join(
      _SHARED, 'corpus', '2wikimultihopqa_corpus.json'
  )
  c.chat_template = 'chatml' if tiny else 'qwen3'
  c.context_policy = 'sliding_window'
  c.keep_last_n_observations = 5
  c.total_updates = 20 if tiny else 507
  # Validation NLL cadence (the recipe records four evaluations).
  c.eval_every = 10 if tiny else 127
  # A pretraining workdir whose parameters (and tokenizer) start the run.
  c.init_from = ''
  # 'random' allows random initial weights; 'pretrained' requires init_from or
  # model.load_parameters_path (the recipe must not train 30B from noise).
  c.init = 'random' if tiny else 'pretrained'
  return c


def _pretrain_tiny() -> ml_collections.ConfigDict:
  """The tiny MoE pretrained from scratch on the bundled corpus."""
  c = _variant('tiny')
  # 512-token rows: 2Wiki paragraphs are ~150 tokens, and attention costs
  # less per token in short rows (docs/experiments/training-throughput.md).
  c.model.max_target_length = 512
  # 64-position attention blocks and one kept 512-position logits chunk:
  # the fastest at this shape (docs/experiments/training-throughput.md).
  c.model.attention_block = 64
  c.model.logits_chunk = 512
  corpus = c.tokenizer_corpus = _CORPUS
  c.data.update(
      dict(
          mode='pretrain',
          format='corpus',
          train_path=corpus,
          val_path=corpus,
          # 6,119 documents: the last 119 are validation.
          train_lines=(0, 6000),
          val_lines=(6000, 6119),
          seq_len=512,
          micro_steps=8,
          num_packing_bins=16,
          # A fifth of the sequences copy/recall names (pretrain_data).
          synthetic_fraction=0.2,
          num_epochs=None,
      )
  )
  c.schedule.update(dict(warmup_steps=10, total_steps=200))
  c.checkpoint.every = 50
  c.total_updates = 200
  c.eval_every = 50
  return c
