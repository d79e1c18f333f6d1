"""The two builders of a job's roles that `job.run_job` takes.

`ProgrammaticRoles` builds the :tiny roles (pattern claims, template
questions) and refuses a job that asks for an LLM role. `LLMRoles(llms)`
builds the LLM roles of llm_roles.py: it takes ready LLMs by name (tests
pass scripted clients) and builds any name it lacks from the job's
`llm.<name>` section through llm.registry. Every LLM is wrapped in the
response cache under `job.cache_dir` (default WORKDIR/llm_cache/<name>),
inside a `role_client.RoleLLM` that holds the role's budget, stops and
parse retries and counts its calls (`report()`, funnel.json `roles`).
"""

import asyncio
import pathlib
from typing import Any

from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm import role_client
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.synthesis import cache as cache_lib
from search_agent.synthesis import iris
from search_agent.synthesis import llm_roles
from search_agent.synthesis import role_check
from search_agent.synthesis import roles as roles_lib
from search_agent.synthesis import solver as solver_lib
from search_agent.synthesis.config import SynthesisConfigError
from search_agent.synthesis.config import SynthesisJob


class ProgrammaticRoles:
  """The :tiny roles: pattern claims, template questions, nothing else."""

  def extractor(self, job: SynthesisJob, workdir: pathlib.Path):
    del workdir
    for role, kind in job.roles.items():
      if kind not in ('pattern', 'template', 'none', 'path'):
        raise SynthesisConfigError(
            f'role {role} is {kind!r}: LLM roles are built by'
            ' synthesis.role_builders.LLMRoles'
        )
    return None

  def build(self, job, prep, workdir) -> dict[str, Any]:
    del workdir
    return {
        'generator': roles_lib.TemplateGenerator(
            prep.docs, prep.types, job.heldout_phrasing_ids()
        )
    }


class LLMRoles:
  """The roles of a job that asks for LLM roles (see ProgrammaticRoles)."""

  def __init__(self, llms: dict[str, protocol.LLM] | None = None):
    self._given = dict(llms or {})
    self._built: dict[str, role_client.RoleLLM] = {}
    self._extractor: llm_roles.LLMClaimExtractor | None = None
    self.engine = None

  def llm(
      self, job: SynthesisJob, workdir: pathlib.Path, name: str
  ) -> role_client.RoleLLM:
    if name in self._built:
      return self._built[name]
    root = (
        pathlib.Path(job.cache_dir) if job.cache_dir else workdir / 'llm_cache'
    )

    def cached(llm: protocol.LLM) -> protocol.LLM:
      return cache_lib.CachedLLM(llm, root / name)

    given = self._given.get(name)
    if given is not None:
      llm = role_client.RoleLLM(cached(given), name)
    else:
      section = job.llm.get(name) or {}
      if not section.get('kind'):
        raise SynthesisConfigError(
            f'the job needs an LLM for {name!r}: set --config.llm.{name}.kind'
            f' (openai: and .openai.base_url/.model), or serve one model for'
            ' every role with --config.served.enabled=True'
        )
      llm = registry.build_role(registry.from_dict(section), name, wrap=cached)
    self._built[name] = llm
    return llm

  def extractor(self, job: SynthesisJob, workdir: pathlib.Path):
    if job.role('extractor') != 'llm':
      return None
    self._extractor = llm_roles.LLMClaimExtractor(
        self.llm(job, workdir, 'extractor'),
        job.loop.max_concurrency,
        fallback=job.extractor_fallback,
    )
    return self._extractor

  def report(self) -> dict[str, Any]:
    """Role → its counters (calls, retries, parse failures, ...)."""
    out = {name: llm.report() for name, llm in sorted(self._built.items())}
    if self._extractor is not None and 'extractor' in out:
      out['extractor']['pages'] = self._extractor.report()
    return out

  def check(self, built: dict[str, Any], prep) -> dict[str, Any]:
    """One probe call of every built role (role_check.check)."""
    return asyncio.run(role_check.check(built, self._extractor, prep))

  def build(self, job: SynthesisJob, prep, workdir) -> dict[str, Any]:
    docs = prep.docs
    out: dict[str, Any] = {}
    # A second engine over the same index for the roles that search (the
    # controller's is closed by run_job).
    self.engine = tantivy_engine(pathlib.Path(workdir) / 'index')
    if job.mode == 'iris':
      out['generator'] = iris.IrisGenerator(
          self.llm(job, workdir, 'generator'), self.engine, docs,
          job.iris,
      )  # fmt: skip
      out['verifier'] = iris.DualVerifier(
          self.llm(job, workdir, 'reference'),
          self.llm(job, workdir, 'judge'),
          docs,
          job.iris,
      )
    elif job.role('generator') == 'llm':
      out['generator'] = llm_roles.LLMGenerator(
          self.llm(job, workdir, 'generator'), docs
      )
    else:
      out['generator'] = roles_lib.TemplateGenerator(
          docs, prep.types, job.heldout_phrasing_ids()
      )
    if job.role('critic') == 'llm':
      out['critic'] = llm_roles.LLMCritic(
          self.llm(job, workdir, 'critic'), docs
      )
    if job.role('solver') == 'agent':
      judge = self.llm(job, workdir, 'judge') if job.llm.get('judge', {}).get(
          'kind') or 'judge' in self._given else None  # fmt: skip
      out['solver'] = solver_lib.AgentSolver(
          self.llm(job, workdir, 'solver'), self.engine, judge=judge
      )
    if job.role('verifier') == 'llm' and job.mode != 'iris':
      out['verifier'] = llm_roles.LLMVerifier(
          self.llm(job, workdir, 'verifier'), self.engine, docs
      )
    if job.role('claim_selection') == 'judge':
      out['claim_selector'] = llm_roles.JudgeClaimSelector(
          self.llm(job, workdir, 'judge'), docs
      )
    return out

  def close(self) -> None:
    if self.engine is not None:
      self.engine.close()
      self.engine = None
