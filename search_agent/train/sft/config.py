"""SFT run configuration: the record and its conversion from a ConfigDict."""

import dataclasses
from typing import Any, Mapping

from search_agent.model import config as model_config_lib
from search_agent.model import families
from search_agent.model import mesh as mesh_lib
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class SFTConfig:
  """Everything an SFT run needs.

  Attributes:
    model: The model to build.
    layout: Its parallel layout.
    optimizer: Optimizer config_lib.
    schedule: Learning-rate schedule.
    data: Data pipeline config_lib.
    checkpoint: Checkpoint cadence.
    tokenizer_path: tokenizer.json (file or directory); '' trains the tiny
      tokenizer on `tokenizer_corpus` into <workdir>/tokenizer.
    tokenizer_corpus: `[{title, text}]` JSON corpus for the tiny tokenizer.
    chat_template: Renderer template name ('chatml', 'qwen3').
    context_policy: Context policy applied when preparing sequences
      ('sliding_window' as in the recipe, or 'none').
    keep_last_n_observations: Sliding-window size (tool observations kept).
    total_updates: Optimizer updates to run (the recipe: 507).
    eval_every: Validation NLL every this many updates (0 = only at the end).
    init_from: A pretraining (or SFT) workdir whose latest checkpoint's
      parameters start this run ('' = the model's own initialisation or
      model.load_parameters_path); see `train.sft.inputs`.
    init: 'random' allows starting from random weights; 'pretrained' (the recipe)
      requires `init_from` or `model.load_parameters_path`.
  """

  model: model_config_lib.ModelConfig
  layout: mesh_lib.Parallelism
  optimizer: optim.OptimizerConfig
  schedule: schedule_lib.ScheduleConfig
  data: data_lib.DataConfig
  checkpoint: checkpoint_lib.CheckpointConfig
  tokenizer_path: str
  tokenizer_corpus: str = ''
  chat_template: str = 'chatml'
  context_policy: str = 'sliding_window'
  keep_last_n_observations: int = 5
  total_updates: int
  eval_every: int = 0
  init_from: str = ''
  init: str = 'random'

  def __post_init__(self):
    if self.init not in INIT_CHOICES:
      raise ValueError(
          f'init {self.init!r} is unknown: use one of {INIT_CHOICES}'
      )


INIT_CHOICES = ('random', 'pretrained')


def _tuple_fields(d: Mapping[str, Any], names: tuple[str, ...]) -> dict:
  out = dict(d)
  for n in names:
    if n in out and out[n] is not None:
      out[n] = tuple(out[n])
  return out


def from_config_dict(c: Mapping[str, Any]) -> SFTConfig:
  """SFTConfig from the ConfigDict of tpu_configs/sft.py."""
  top = {
      k: v
      for k, v in dict(c).items()
      if k
      not in ('model', 'layout', 'optimizer', 'schedule', 'data', 'checkpoint')
  }
  return SFTConfig(
      model=families.model_from_dict(c['model']),
      layout=families.layout_from_dict(c['layout']),
      optimizer=optim.OptimizerConfig(
          **_tuple_fields(c['optimizer'], ('frozen',))
      ),
      schedule=schedule_lib.ScheduleConfig(**dict(c['schedule'])),
      data=data_lib.DataConfig(
          **_tuple_fields(c['data'], ('train_lines', 'val_lines'))
      ),
      checkpoint=checkpoint_lib.CheckpointConfig(**dict(c['checkpoint'])),
      **top,
  )
