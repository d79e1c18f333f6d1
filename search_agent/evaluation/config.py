"""The config edge of `eval.run`: ConfigDict sections to frozen dataclasses,
LLMs and the toolbox factory (tpu_configs/eval.py documents every field)."""

import contextlib
import dataclasses
import os
import pathlib
from typing import Any, Iterator, Mapping

from absl import logging

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import mas
from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.corpus import sources
from search_agent.evaluation import datasets
from search_agent.evaluation import grading
from search_agent.evaluation import harness
from search_agent.evaluation import toolboxes
from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import client as client_lib
from search_agent.search import reranker as reranker_lib
from search_agent.search import tantivy_build
from search_agent.search import tantivy_index
from search_agent.search import tools as tools_lib
from search_agent.search.tantivy_backend import tantivy_engine

EvalSetupError = toolboxes.EvalSetupError


def _dict(section: Any) -> dict[str, Any]:
  return section.to_dict() if hasattr(section, 'to_dict') else dict(section)


def eval_config(c: Any) -> harness.EvalConfig:
  """The EvalConfig of a tpu_configs/eval.py ConfigDict."""
  a = _dict(c.agent)
  agent = react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=a['max_steps'],
          max_output_tokens=a['max_output_tokens'],
          context_limit=a['context_limit'],
          min_output_tokens=a['min_output_tokens'],
          compress_at=a['compress_at'],
      ),
      context=managed_context.ContextConfig(**_dict(c.context)),
      temperature=a['temperature'],
      top_p=a['top_p'],
      seed=a['seed'],
  )
  if _dict(c.policy).get('kind') in ('sampler', 'served'):
    _check_sampler_limits(agent.budgets, _dict(c.sampler))
  return harness.EvalConfig(
      dataset=datasets.DatasetConfig(**_dict(c.dataset)),
      mode=c.mode,
      agent=agent,
      mas=mas.MASConfig(**_dict(c.mas)),
      grader=grading.GraderConfig(**_dict(c.grader)),
      system_prompt=c.system_prompt,
      concurrency=c.concurrency,
      tokenizer=c.tokenizer,
      regrade=c.regrade,
      tool_text=c.tool_text,
      repeats=c.repeats,
      max_failed_share=c.max_failed_share,
      progress_every_s=c.progress_every_s,
  )


def _check_sampler_limits(b: budgets.Budgets, sampler: Mapping[str, Any]):
  """The agent's limits must be the in-process sampler's real ones.

  Otherwise the sampler's own caps end calls first: the manifest would
  report limits that never applied, and context management, triggered by
  `agent.context_limit`, would never fire before the sampler's prompt cap.
  """
  window = sampler['max_prompt_len'] + sampler['max_new_tokens']
  if (
      b.context_limit > window
      or b.max_output_tokens > sampler['max_new_tokens']
  ):
    raise EvalSetupError(
        f'policy.kind=sampler/served: agent.context_limit ({b.context_limit}) must'
        f' be <= sampler.max_prompt_len + sampler.max_new_tokens ({window})'
        f' and agent.max_output_tokens ({b.max_output_tokens}) <='
        f' sampler.max_new_tokens ({sampler["max_new_tokens"]}); lower the'
        ' agent limits or raise the sampler ones'
    )


def llm(
    section: Any, sampler: Any = None
) -> tuple[protocol.LLM | None, dict[str, Any] | None]:
  """The LLM of a section and its manifest; (None, None) for kind 'none'.

  Kind 'sampler' builds the in-process model from the `sampler` section.
  """
  d = _dict(section)
  if d.get('kind') == 'none':
    return None, None
  if d.get('kind') == 'sampler':
    if sampler is None:
      raise EvalSetupError("kind 'sampler' is for the policy only")
    # Imported here: it loads JAX and MaxText, which other kinds never need.
    # pylint: disable-next=g-import-not-at-top
    from search_agent.evaluation import in_process

    return in_process.build(_dict(sampler), d.get('name', ''))
  config = registry.from_dict(d)
  return registry.build(config), config.manifest()


toolbox_factory = toolboxes.toolbox_factory
