"""Builds the rollout engine a serve config names (model, weights, tokenizer).

Weights come from a training run's orbax checkpoints (params only, straight
onto the engine's mesh), converted HF params, or random init (pulses).
`load_weights` is what `/update_weights` calls: the params of a checkpoint
directory, checked against the engine's model before anything is swapped.
"""

import dataclasses
import time
from typing import Any, Mapping

from absl import logging
import jax

from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.model import checkpoint_params
from search_agent.model import engine as engine_lib
from search_agent.model import engine_core
from search_agent.model import engine_types
from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import maxtext_model


class ServeSetupError(ValueError):
  """The serve config is inconsistent (weights, tokenizer)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelSettings:
  """The served model (see tpu_configs/serve.py `model`)."""

  preset: str
  layout: str
  dims: tuple[str, ...] = ()  # 'name=value' sizes (families.with_dims)
  checkpoint_dir: str = ''
  checkpoint_step: int = checkpoint_params.LATEST
  params_path: str = ''
  policy_version: int = -1
  devices: int = 0

  def __post_init__(self):
    if self.params_path and self.checkpoint_dir:
      raise ServeSetupError(
          'set at most one of model.params_path and model.checkpoint_dir'
      )


@dataclasses.dataclass(frozen=True)
class Served:
  """A started engine and what the HTTP layer needs beside it."""

  engine: engine_lib.Engine
  prompts: chat_prompts.RendererPrompts
  model_name: str


def build(c: Mapping[str, Any]) -> Served:
  """Builds and starts the engine of a serve config."""
  m = ModelSettings(**dict(c['model']))
  ecfg = engine_types.EngineConfig(**dict(c['engine']))
  devices = jax.devices()[: m.devices] if m.devices else jax.devices()
  cfg = families.with_dims(families.model_preset(m.preset), m.dims)
  tok = _tokenizer(c['tokenizer'], cfg.vocab_size)
  prompts = chat_prompts.RendererPrompts(tok, c['template'])
  layout = families.layout_preset(m.layout)
  core = engine_core.EngineCore(
      cfg,
      layout,
      slots=ecfg.slots,
      max_context=ecfg.max_context,
      ring_len=ecfg.ring_len,
      steps_per_call=ecfg.steps_per_call,
      max_extend=ecfg.max_extend,
      top_logprobs=ecfg.top_logprobs,
      devices=devices,
  )
  version = 0
  if m.checkpoint_dir:
    params, version = load_weights(core, m.checkpoint_dir, m.checkpoint_step)
  else:
    model = maxtext_model.build(
        dataclasses.replace(cfg, max_target_length=ecfg.max_context),
        layout,
        devices=devices,
    )
    params = model.params
    if m.params_path:
      params = hf_import.load_params(model, m.params_path)
  if m.policy_version >= 0:
    version = m.policy_version
  w = c.get('warmup') or {}
  if w.get('enabled'):
    widths = [x for x in (16 * 2**k for k in range(16))
              if x <= min(w['max_extend_width'], ecfg.max_extend)]  # fmt: skip
    t0 = time.monotonic()
    core.warmup(core.place_params(params), widths)
    logging.info('warm-up compiled in %.1f s', time.monotonic() - t0)
  engine = engine_lib.Engine(
      core, ecfg, vocab_size=cfg.vocab_size, decode_fn=tok.decode
  )
  engine.start(params, version)
  return Served(engine=engine, prompts=prompts, model_name=c['model_name'])


def load_weights(core, path: str, step: int = checkpoint_params.LATEST):
  """(params, step) of a checkpoint dir, shaped for `core`.

  Raises:
    engine_types.WeightsError: No such checkpoint, or not this model's.
  """
  try:
    return checkpoint_params.restore_params(path, core.abstract_params(), step)
  except checkpoint_params.CheckpointMismatchError as e:
    raise MismatchError(str(e)) from e
  except checkpoint_params.CheckpointError as e:
    raise engine_types.WeightsError(str(e)) from e


class MismatchError(engine_types.WeightsError):
  """The checkpoint is another model's (HTTP 409)."""


def _tokenizer(path: str, vocab_size: int) -> tokenizer_lib.Tokenizer:
  try:
    return tokenizer_lib.load_model_tokenizer(path, vocab_size)
  except tokenizer_lib.VocabSizeError as e:
    raise ServeSetupError(
        str(e) + ': serve the tokenizer the model was trained with'
    ) from e
