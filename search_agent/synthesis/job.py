"""Runs a synthesis job in a workdir (the library side of `synthesis.run`)."""

import dataclasses
import pathlib
import time
from typing import Any

from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.synthesis import journal as journal_lib
from search_agent.synthesis import pipeline
from search_agent.synthesis import role_builders
from search_agent.synthesis import role_check
from search_agent.synthesis.config import SynthesisJob
from search_agent.synthesis.controller import Controller
from search_agent.synthesis.loop import SynthesisLoop


def run_job(
    job: SynthesisJob, workdir: str | pathlib.Path, roles=None
) -> dict[str, Any]:
  """Prepares, runs the loop (resuming), writes outputs; returns the report.

  Args:
    job: The job.
    workdir: Output directory (created); its journal makes reruns resume.
    roles: Has `extractor(job, workdir)` (a claim function or None for
      the pattern extractor) and `build(job, prep, workdir)` (a dict with
      'generator' and optional 'critic', 'solver', 'verifier',
      'claim_selector'); default `role_builders.ProgrammaticRoles`
      (raises for a job that asks for an LLM role).
  """
  start = time.perf_counter()
  workdir = pathlib.Path(workdir)
  workdir.mkdir(parents=True, exist_ok=True)
  index_dir, index_s = pipeline.timed(
      pipeline.ensure_index, job.corpus, workdir
  )
  roles = roles or role_builders.ProgrammaticRoles()
  extract = roles.extractor(job, workdir)
  prep, prep_s = pipeline.timed(
      pipeline.prepare,
      job.corpus,
      job.anchor,
      job.max_hops,
      job.max_graphs,
      extract,
  )
  built = roles.build(job, prep, workdir)
  engine = tantivy_engine(index_dir)
  checked = None
  try:
    if job.role_check and hasattr(roles, 'check'):
      checked, check_s = pipeline.timed(roles.check, built, prep)
      checked['seconds'] = check_s
      if job.role_check_fail_fast:
        role_check.raise_on_failed(checked)
    loop = SynthesisLoop(
        built['generator'],
        Controller(prep.docs, prep.claims, engine, job.controller),
        job.loop,
        critic=built.get('critic'),
        solver=built.get('solver'),
        verifier=built.get('verifier'),
        claim_selector=built.get('claim_selector'),
    )
    journal = journal_lib.Journal(workdir / 'journal.jsonl')
    resumed = len(journal.records)
    ran, loop_s = pipeline.timed(
        pipeline.run_loop, loop, prep.graphs, journal, job.chunk_size,
        job.progress,
    )  # fmt: skip
  finally:
    engine.close()
    if hasattr(roles, 'close'):
      roles.close()
  extras = {}
  if hasattr(roles, 'report'):
    extras['roles'] = roles.report()
  if checked is not None:
    extras['role_check'] = checked
  manifest = {
      'mode': job.mode,
      'roles': job.programmatic_roles(),
      'job': _jsonable(job),
      'resumed_graphs': resumed,
      'graphs_run_now': ran,
      'seconds': {
          'index': index_s,
          'prepare': prep_s,
          'loop': loop_s,
      },
  }
  report = pipeline.write_outputs(
      workdir,
      prep,
      journal,
      job.heldout_fraction,
      job.rl_fraction,
      job.seed,
      manifest,
      extras,
      job.heldout_phrasing_ids(),
  )
  report['seconds_total'] = round(time.perf_counter() - start, 2)
  return report


def _jsonable(job: SynthesisJob) -> dict[str, Any]:
  return dataclasses.asdict(job)
