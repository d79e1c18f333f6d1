"""Filtering config (ml_collections) -> frozen job settings and the judge LLM.

Kept apart from the `run` binary so that tests and other binaries can use it
without defining the binary's flags.
"""

import ml_collections

from search_agent.filtering import degeneration
from search_agent.filtering import job as job_lib
from search_agent.filtering import pipeline
from search_agent.filtering import turn_mask
from search_agent.llm import protocol
from search_agent.llm import registry


def job_from_config(c: ml_collections.ConfigDict) -> job_lib.FilterJob:
  """ConfigDict -> FilterJob (frozen dataclasses from here on)."""
  mask = turn_mask.TurnMaskConfig(
      **{k: v for k, v in c.turn_mask.items() if k != 'enabled'}
  )
  return job_lib.FilterJob(
      mode=c.mode,
      input_path=c.input_path,
      input_format=c.input_format,
      tasks_path=c.tasks_path,
      known_tools=tuple(c.known_tools),
      judge=c.judge,
      pipeline=pipeline.PipelineConfig(
          rollouts_per_task=c.rollouts_per_task,
          judge_concurrency=c.judge_concurrency,
          degeneration=degeneration.DegenerationConfig(**c.degeneration),
          min_tool_turns=c.min_tool_turns,
          dedup=c.dedup,
          turn_mask=mask if c.turn_mask.enabled else None,
      ),
      examples_per_reason=c.examples_per_reason,
      loop_periods=tuple(c.loop_periods),
      loop_lengths=tuple(c.loop_lengths),
      seed=c.seed,
      rubric_samples=c.rubric_samples,
      rubric_turn_mask=mask,
  )


def llm_from_config(c: ml_collections.ConfigDict) -> protocol.LLM | None:
  """The judge LLM (search_agent.llm.registry), None when kind is ''.

  Built as the role 'judge' (`registry.build_role`): its section's
  max_tokens, stop and parse_retries apply, and its calls are counted.
  """
  if not c.kind:
    return None
  section = c.to_dict()
  if section['kind'] != 'scripted':
    section.pop('script')
  return registry.build_role(registry.from_dict(section), 'judge')
