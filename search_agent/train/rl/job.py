"""Builds the RL run's pieces from tpu_configs/rl.py (the binary's edge).

Roles: the learner (model on its mesh, optimizer, scheduler, checkpoints),
rollout workers (sampler on its mesh, agent harness, tools, judge), or both
in one process on split meshes (`devices`). Shared files under the workdir:
`tokenizer/`, `index/` (each built once, atomically, when absent), `queue/`
(replay queue), `weights/` (policy versions), `checkpoints/`.
"""

import dataclasses
import json
import os
import pathlib
import shutil
from typing import Any
import uuid

import jax
import ml_collections

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.corpus import sources
from search_agent.filtering import climb_selection
from search_agent.llm import registry
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.model import checkpoint_params
from search_agent.model import config as model_config_lib
from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import maxtext_model
from search_agent.search import schemas as tool_schemas
from search_agent.search import tantivy_build
from search_agent.search import tools as tools_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.rl import config as config_lib
from search_agent.train.rl import loop as loop_lib
from search_agent.train.rl import parity as parity_lib
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import scoring


class RLSetupError(ValueError):
  """The RL config is inconsistent; the message says what to change."""


def loop_config(c: ml_collections.ConfigDict) -> loop_lib.LoopConfig:
  lc = c.learner
  return loop_lib.LoopConfig(
      max_updates=c.max_updates,
      seq_len=lc.seq_len,
      microbatch_size=lc.microbatch_size,
      dynamic_sampling=lc.dynamic_sampling,
      partial_rollouts=c.rollout.partial,
      checkpoint_every=lc.checkpoint_every,
      poll_s=lc.poll_s,
      stall_timeout_s=lc.stall_timeout_s,
      lease_timeout_s=lc.lease_timeout_s,
      scheduler=config_lib.scheduler_config(c),
      loss=config_lib.loss_config(c),
      advantages=config_lib.advantage_config(c),
      parity=parity_lib.ParityConfig(**c.parity.to_dict()),
      temperature=c.rollout.temperature,
  )


def agent_config(c: ml_collections.ConfigDict) -> react.AgentConfig:
  r = c.rollout
  return react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=r.max_agent_steps,
          max_output_tokens=r.max_tokens_per_call,
          context_limit=r.context_limit,
          min_output_tokens=r.min_output_tokens,
      ),
      context=managed_context.ContextConfig(
          policy=r.context_policy, keep_observations=r.keep_observations
      ),
      temperature=r.temperature,
      top_p=r.top_p,
  )


def toolbox_config(c: ml_collections.ConfigDict) -> tools_lib.ToolboxConfig:
  """The tools every rollout's toolbox offers (`search.tools`, `top_k`)."""
  return tools_lib.ToolboxConfig(
      tools=tuple(c.search.tools), top_k=c.search.top_k
  )


def worker_config(c: ml_collections.ConfigDict) -> rollout_worker.WorkerConfig:
  r = c.rollout
  return rollout_worker.WorkerConfig(
      worker_id=r.worker_id,
      group_size=c.group_size,
      max_groups=r.max_groups,
      max_attempts=r.max_attempts,
      system_prompt=r.system_prompt,
      latency_median_s=r.latency_median_s,
      latency_p99_s=r.latency_p99_s,
      # Benchmarks: stratified over the pool (rollout_worker.WorkerConfig).
      latency_strata=(
          tuple(t.id for t in load_tasks(c)) if r.latency_median_s > 0 else ()
      ),
  )


def system_text(c: ml_collections.ConfigDict) -> str:
  """The rollout agent's system prompt: `rollout.system_prompt` with the
  tools of `search.tools` as `rollout.tool_text` shows them."""
  schemas = tool_schemas.tool_schemas(tuple(c.search.tools))
  return prompt_lib.load(c.rollout.system_prompt).render(
      tools=react.tool_text(schemas, c.rollout.tool_text)
  )


def climb_config(c) -> climb_selection.ClimbConfig:
  return climb_selection.ClimbConfig(
      min_pass=c.climbing.min_pass,
      max_pass=c.climbing.max_pass,
      min_tool_turns=c.climbing.min_tool_turns,
  )


def model_config(c: ml_collections.ConfigDict) -> model_config_lib.ModelConfig:
  return families.model_from_dict(c.model)


def split_devices(c, role: str) -> tuple[list, list]:
  """(learner devices, sampler devices) of this process."""
  devs = jax.devices()
  if role != 'all':
    return devs, devs
  if c.rollout.policy != 'in_process':
    # Rollouts are sampled by servers or an endpoint: the sampler takes no
    # devices. An unset learner.devices is still half (the CPU runs' measured
    # layout), but at least one, so a single accelerator trains.
    n_l = c.learner.devices or max(1, len(devs) // 2)
    if n_l > len(devs):
      raise RLSetupError(
          f'learner.devices={n_l} does not fit the {len(devs)} devices of'
          ' this process'
      )
    return devs[:n_l], []
  n_l = c.learner.devices or len(devs) // 2
  n_s = c.sampler.devices or len(devs) - n_l
  if n_l + n_s > len(devs) or min(n_l, n_s) < 1:
    raise RLSetupError(
        f'learner.devices={n_l} + sampler.devices={n_s} do not fit the'
        f' {len(devs)} devices of this process'
    )
  return devs[:n_l], devs[n_l : n_l + n_s]


def _atomic_build(final: pathlib.Path, build) -> None:
  if final.exists():
    return
  tmp = final.with_name(f'{final.name}.tmp-{uuid.uuid4().hex}')
  build(tmp)
  try:
    os.rename(tmp, final)
  except OSError:  # another process finished first
    shutil.rmtree(tmp, ignore_errors=True)


def tokenizer(c, workdir: str) -> tokenizer_lib.Tokenizer:
  """The configured tokenizer, the SFT run's, or the tiny one (trained once)."""
  return tokenizer_lib.load_tokenizer(tokenizer_path(c, workdir))


def tokenizer_path(c, workdir: str) -> str:
  """Where `tokenizer` loads from: tokenizer.path, the SFT run's, or the
  tiny one in the workdir (trained once, here)."""
  if c.tokenizer.path:
    return c.tokenizer.path
  if c.init.sft_workdir:
    sft_tok = os.path.join(c.init.sft_workdir, 'tokenizer')
    if os.path.isdir(sft_tok):
      return sft_tok
  out = pathlib.Path(workdir) / 'tokenizer'

  def build(tmp):
    with open(c.tokenizer.corpus, encoding='utf-8') as f:
      docs = json.load(f)
    tokenizer_lib.train_tiny_tokenizer(docs, tmp, c.model.vocab_size)

  _atomic_build(out, build)
  return str(out)


def index_dir(c, workdir: str) -> str:
  """The search index: configured, or <workdir>/index built when absent."""
  if c.search.index_dir or c.search.url:
    return c.search.index_dir
  out = pathlib.Path(workdir) / 'index'
  _atomic_build(
      out,
      lambda tmp: tantivy_build.build_tantivy_index(sources.CorpusSpec(), tmp),
  )
  return str(out)


def load_tasks(c) -> list[task_lib.Task]:
  tasks = list(task_lib.iter_tasks(c.tasks_path))
  if not tasks:
    raise RLSetupError(f'{c.tasks_path} holds no tasks')
  return tasks


def learner_model(c, devices) -> maxtext_model.Model:
  """The learner's model: random init, an SFT checkpoint or HF params."""
  cfg = model_config(c)
  if c.init.sft_workdir and c.init.params_path:
    raise RLSetupError('set at most one of init.sft_workdir, init.params_path')
  layout = families.layout_preset(c.learner.layout)
  model = maxtext_model.build(
      cfg, layout, devices=devices, record_routing=cfg.supports_replay
  )
  if c.init.sft_workdir:
    params, _ = checkpoint_params.restore_params(
        c.init.sft_workdir, model.params, c.init.sft_step
    )
    model = dataclasses.replace(model, params=params)
  elif c.init.params_path:
    model = dataclasses.replace(
        model, params=hf_import.load_params(model, c.init.params_path)
    )
  return model


def optimizer(c, model: maxtext_model.Model):
  """Muon (or AdamW) from the config, the router frozen when asked."""
  o = c.optimizer
  cfg = optim.OptimizerConfig(
      name=o.name,
      momentum=o.momentum,
      nesterov=o.nesterov,
      weight_decay=o.weight_decay,
      spectral_scale=o.spectral_multiplier,
      frozen=(
          (model_config_lib.ROUTER_PARAM_PATTERN,)
          if model.config.freeze_router
          else ()
      ),
  )
  sched = schedule_lib.make_schedule(
      schedule_lib.ScheduleConfig(kind='constant', peak=o.learning_rate)
  )
  return optim.make_optimizer(cfg, sched, model.params, model.logical_axes)


def scorer(c) -> Any:
  """The rollout scorer the config names."""
  weights = config_lib.reward_weights(c)
  if c.judge.kind == 'deterministic':
    return scoring.DeterministicScorer(weights)
  if c.judge.kind != 'llm':
    raise RLSetupError(
        f'judge.kind {c.judge.kind!r}: use "llm" or "deterministic"'
    )
  llm = registry.build_role(registry.from_dict(c.judge.llm.to_dict()), 'judge')
  return scoring.LLMScorer(llm, llm, config_lib.claim_voting(c), weights)
