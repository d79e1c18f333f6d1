"""What an SFT run reads: tokenizer, data per mode, starting parameters.

Data modes (`data.mode`):
  * 'sft': trajectory JSONL / chatml -> context policy -> renderer -> views
    fitted at whole turns (`train.data`); loss on assistant turns.
  * 'pretrain': `[{title, text}]` corpus JSON -> text windows
    (`pretrain_data`); loss on every token, optionally with synthetic
    copy/recall sequences.
In 'sft' mode `data.rehearsal_path` mixes such texts into the training
elements (`rehearsal`).

Starting parameters (`init_from`): a pretraining (or any SFT) workdir; its
latest checkpoint's parameters start the run (optimizer state, schedule and
data position start fresh), and when `tokenizer_path` is '' its tokenizer
(`<init_from>/tokenizer`) is used, so ids mean the same thing in both stages.
"""

import json
import tempfile
from typing import Any, Iterator

from search_agent import distributed
from search_agent import paths
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.model import config as model_config_lib
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import pretrain_data
from search_agent.train.sft import rehearsal

MODES = ('sft', 'pretrain')


class InitError(ValueError):
  """`init_from` names no usable checkpoint."""


def load_or_train_tokenizer(
    cfg: sft_config.SFTConfig, workdir: str
) -> tokenizer_lib.Tokenizer:
  """The configured tokenizer, init_from's, or the tiny one trained once."""
  if cfg.tokenizer_path:
    return tokenizer_lib.load_tokenizer(paths.local_copy(cfg.tokenizer_path))
  for base in (cfg.init_from, workdir):
    out = paths.join(base, 'tokenizer') if base else ''
    if out and paths.exists(paths.join(out, tokenizer_lib.TOKENIZER_FILE)):
      return tokenizer_lib.load_tokenizer(paths.local_copy(out))
  if cfg.init_from:
    raise InitError(
        f'init_from {cfg.init_from} has no tokenizer/; set tokenizer_path'
    )
  if not cfg.tokenizer_corpus:
    raise ValueError(
        'set tokenizer_path, or tokenizer_corpus to train the tiny tokenizer'
    )
  out = paths.join(workdir, 'tokenizer')
  if not distributed.is_writer():  # process 0 trains it; the others read it
    distributed.barrier('tokenizer')
    return tokenizer_lib.load_tokenizer(paths.local_copy(out))
  tok = _train_tokenizer(cfg, out)
  distributed.barrier('tokenizer')
  return tok


def _train_tokenizer(
    cfg: sft_config.SFTConfig, out: str
) -> tokenizer_lib.Tokenizer:
  docs = json.loads(paths.read_text(cfg.tokenizer_corpus))
  if paths.is_local(out):
    return tokenizer_lib.train_tiny_tokenizer(docs, out, cfg.model.vocab_size)
  local = tempfile.mkdtemp('-tokenizer')
  tok = tokenizer_lib.train_tiny_tokenizer(docs, local, cfg.model.vocab_size)
  paths.upload_dir(local, out)
  return tok


class Inputs:
  """The run's data: training updates, validation batches, the report."""

  def __init__(self, cfg: sft_config.SFTConfig, workdir: str):
    if cfg.data.mode not in MODES:
      raise data_lib.DataError(
          f'data.mode {cfg.data.mode!r} is not one of {MODES}'
      )
    self.tokenizer = load_or_train_tokenizer(cfg, workdir)
    if self.tokenizer.vocab_size > cfg.model.vocab_size:
      raise model_config_lib.ModelConfigError(
          f'tokenizer has {self.tokenizer.vocab_size} ids but the model'
          f' vocab_size is {cfg.model.vocab_size}; raise model.vocab_size'
      )
    self.cfg = cfg
    self._probe_texts = None
    d = cfg.data
    _check_rehearsal(d)
    if d.mode == 'sft':
      self.render = data_lib.make_render_fn(
          self.tokenizer,
          cfg.context_policy,
          cfg.keep_last_n_observations,
          cfg.chat_template,
      )
      self.examples = data_lib.sft_examples(self.render, d.seq_len)
      if d.rehearsal_fraction:
        self.examples = rehearsal.examples_fn(
            self.examples,
            pretrain_data.example_fn(self.tokenizer, d.seq_len),
        )
    else:
      self.render = None
      self.examples = pretrain_data.example_fn(self.tokenizer, d.seq_len)

  def _source(self, path: str, lines: tuple[int, int]):
    d = self.cfg.data
    if d.mode == 'sft':
      return data_lib.JsonlTrajectories(path, lines, d.format)
    return pretrain_data.CorpusTexts(
        path, lines, d.synthetic_fraction, d.seed, tuple(d.synthetic_kinds)
    )

  def train_source(self):
    """The training elements (trajectories and rehearsal texts mixed)."""
    d = self.cfg.data
    source = self._source(d.train_path, d.train_lines)
    if not d.rehearsal_fraction:
      return source
    texts = pretrain_data.CorpusTexts(
        d.rehearsal_path,
        (0, 0),
        d.synthetic_fraction,
        d.seed,
        tuple(d.synthetic_kinds),
    )
    return rehearsal.Mixed(source, texts, d.rehearsal_fraction, d.seed)

  def train_updates(self, rows: tuple[int, int] | None = None):
    """The training updates: rows `rows` of each microbatch (default: all),
    read only from the loader streams that hold them (`data.Updates`)."""
    d = self.cfg.data
    source = self.train_source()
    return data_lib.Updates(
        lambda k: data_lib.packed_updates(
            source, self.examples, d, shard=k, score=False
        ),
        d,
        rows or (0, d.micro_batch),
    )

  def validation(self) -> Iterator[data_lib.Example]:
    d = self.cfg.data
    return data_lib.packed_validation(
        self._source(d.val_path, d.val_lines), self.examples, d
    )

  def copy_probe(self) -> Iterator[data_lib.Example] | None:
    """The copy probe (`pretrain_data.copy_probe_texts`) as validation
    batches: in pretrain mode over the validation documents' titles, in SFT
    with rehearsal over the rehearsal corpus's (the pretraining's probe when
    both read one corpus); else None."""
    d = self.cfg.data
    if d.mode == 'pretrain' and d.val_path:
      corpus, lines = d.val_path, d.val_lines
    elif d.mode == 'sft' and d.rehearsal_fraction:
      corpus, lines = d.rehearsal_path, (0, 0)
    else:
      return None
    if self._probe_texts is None:  # read the corpus once, not every eval
      titles = pretrain_data.CorpusTexts(corpus, lines).titles
      self._probe_texts = pretrain_data.copy_probe_texts(titles)
    return data_lib.packed_validation(
        self._probe_texts,
        pretrain_data.copy_probe_fn(self.tokenizer, d.seq_len),
        d,
    )


def _check_rehearsal(d: data_lib.DataConfig) -> None:
  """Rehearsal needs SFT mode, a corpus and a fraction in [0, 1)."""
  if not 0.0 <= d.rehearsal_fraction < 1.0:
    raise data_lib.DataError(
        f'data.rehearsal_fraction must be in [0, 1), got {d.rehearsal_fraction}'
    )
  if d.rehearsal_fraction and d.mode != 'sft':
    raise data_lib.DataError(
        f'data.rehearsal_fraction is for SFT mode; data.mode is {d.mode!r}'
    )
  if d.rehearsal_fraction and not d.rehearsal_path:
    raise data_lib.DataError(
        'data.rehearsal_fraction > 0 needs data.rehearsal_path (a'
        ' [{title, text}] corpus)'
    )


def init_params(init_from: str, like: Any) -> tuple[Any, int]:
  """Parameters of `init_from`'s latest checkpoint, shaped like `like`.

  Returns:
    (params, the checkpoint's update step).
  """
  directory = paths.join(init_from, 'checkpoints')
  if not paths.path(directory).is_dir():
    raise InitError(f'init_from {init_from} holds no checkpoints/')
  ckpt = checkpoint_lib.Checkpointer(
      directory, checkpoint_lib.CheckpointConfig()
  )
  try:
    step = ckpt.latest_step()
    if step is None:
      raise InitError(f'init_from {init_from}: no finished checkpoint')
    try:
      params = ckpt.restore_params(step, like)
    except (ValueError, KeyError, TypeError) as e:
      raise InitError(
          f'init_from {init_from} step {step} does not fit this model (same'
          f' model dims and vocab_size needed): {e}'
      ) from e
  finally:
    ckpt.close()
  return params, step
