"""The harness manifest: everything that decides a score besides the model.

Recorded with every eval (iris.md: "All benchmarks are evaluated under a
consistent configuration, including the same tool set, context-length limit,
and maximum turn budget"): tools and their schemas, prompt hashes, limits,
context policy, judge model and template, sampling and seed, retries counted
as attempts, the dataset file's hash and the code version.
"""

import dataclasses
import datetime
import pathlib
from typing import Any, Mapping

from search_agent import digests
from search_agent.evaluation import grading_protocols
from search_agent.llm.prompts import prompt as prompt_lib


def _git_dir(start: pathlib.Path) -> pathlib.Path | None:
  """The git directory of a checkout (a `.git` dir, or a worktree's file)."""
  for d in [start, *start.parents]:
    git = d / '.git'
    if git.is_dir():
      return git
    if git.is_file():  # worktree or submodule: 'gitdir: <path>'
      text = git.read_text().strip()
      if text.startswith('gitdir: '):
        return (d / text[len('gitdir: ') :]).resolve()
  return None


def code_version(start: pathlib.Path | None = None) -> str:
  """The git commit of the checkout (read from .git, no subprocess)."""
  git = _git_dir((start or pathlib.Path(__file__)).resolve())
  if git is None:
    return 'unknown'
  head = (git / 'HEAD').read_text().strip()
  if not head.startswith('ref: '):
    return head
  ref = head[len('ref: ') :]
  common = git
  if (git / 'commondir').is_file():
    common = (git / (git / 'commondir').read_text().strip()).resolve()
  for root in (git, common):
    if (root / ref).is_file():
      return (root / ref).read_text().strip()
    packed = root / 'packed-refs'
    if packed.is_file():
      for line in packed.read_text().splitlines():
        if line.endswith(' ' + ref):
          return line.split()[0]
  return 'unknown'


def prompt_hashes(*names: str) -> dict[str, str]:
  return {n: prompt_lib.load(n).sha256 for n in names}


def grader_identity(
    grader: Any, judge: Mapping[str, Any] | None, template_sha256: str
) -> str:
  """What decides a grade besides the answer, as one comparable string:
  the benchmark's grading protocol, template hash and judge model (or
  exact match)."""
  if not judge:
    return f'{getattr(grader, "protocol", "") or "default"}/exact_match'
  model = judge.get('openai', {}).get('model') or judge.get('name') or '?'
  return (
      f'{getattr(grader, "protocol", "") or "default"}/'
      f'{grader.template}@{template_sha256[:12]}/{model}'
      f'/T={grader.temperature}'
  )


def build(
    *,
    dataset: Any,
    questions: int,
    mode: str,
    agent: Any,
    mas: Any,
    policy: Mapping[str, Any],
    judge: Mapping[str, Any] | None,
    grader: Any,
    tool_schemas: list[dict[str, Any]],
    toolbox: Mapping[str, Any],
    prompts: Mapping[str, str],
    seed: int | None,
    concurrency: int,
) -> dict[str, Any]:
  """The manifest dict (JSON-serializable)."""
  template = prompt_lib.load(grader.template)
  method = 'judge' if judge else 'exact_match'
  return {
      'created': datetime.datetime.now(datetime.timezone.utc).isoformat(),
      'code_version': code_version(),
      'dataset': {
          **dataclasses.asdict(dataset),
          'file_sha256': digests.file_sha256(dataset.path),
          'questions': questions,
      },
      'mode': mode,
      'mas': dataclasses.asdict(mas) if mode == 'mas' else None,
      'policy_llm': dict(policy),
      'judge': {
          'llm': dict(judge) if judge else None,
          'method': method,
          'template': grader.template,
          'template_sha256': template.sha256,
          'grader': dataclasses.asdict(grader),
          'identity': grader_identity(grader, judge, template.sha256),
          'benchmark_grader': (
              grading_protocols.identity(grader.protocol)
              if grader.protocol
              else None
          ),
      },
      'tools': {
          'names': [s.get('function', s)['name'] for s in tool_schemas],
          'schemas': tool_schemas,
          'toolbox': dict(toolbox),
      },
      'prompts': dict(prompts),
      'limits': dataclasses.asdict(agent.budgets),
      'context_policy': dataclasses.asdict(agent.context),
      'sampling': {
          'temperature': agent.temperature,
          'top_p': agent.top_p,
          'seed': seed,
      },
      'concurrency': concurrency,
      'retries': {},
  }
