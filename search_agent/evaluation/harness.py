"""The eval behind `python -m eval.run`: run, grade, report.

1. Every rollout (question x repeat) not yet in `trajectories.jsonl` (or
   whose run failed) runs as a single ReAct agent or as the MAS,
   `concurrency` at a time (crashes become 'failed' trajectories; an
   interrupted eval resumes), and is graded as soon as it ends
   (`rollouts.py`, with progress lines).
2. Every other trajectory without a result, or whose judge failed before,
   is graded (`grading.py`) and appended to `results.jsonl`.
3. `report.json`, `report.md` and `manifest.json` are written from the
   latest result per rollout (metrics in `metrics.py`); `summary.failures`
   says whether more than `max_failed_share` of the rollouts failed, which
   `eval.run` turns into a non-zero exit.
"""

import dataclasses
import os
import pathlib
from typing import Any, Callable, Mapping

from search_agent.agent import budgets
from search_agent.agent import mas as mas_lib
from search_agent.agent import react
from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.evaluation import browsecomp_plus
from search_agent.evaluation import datasets
from search_agent.evaluation import doc_ids
from search_agent.evaluation import failures
from search_agent.evaluation import grading
from search_agent.evaluation import manifest as manifest_lib
from search_agent.evaluation import metrics
from search_agent.evaluation import report as report_lib
from search_agent.evaluation import results
from search_agent.evaluation import rollouts
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib

MODES = ('single', 'mas')
ToolboxFactory = Callable[[task_lib.Task], react.Toolbox]


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvalConfig:
  """One evaluation.

  Attributes:
    dataset: The benchmark.
    mode: 'single' (one ReAct agent) or 'mas' (two searchers + verifier).
    agent: Budgets, context policy and sampling of every agent.
    mas: Shape of the MAS (mode 'mas').
    grader: Judge template and retries (exact match when no judge).
    system_prompt: Prompt file of the (searcher) agent.
    concurrency: Questions in flight at once.
    tokenizer: Counts prompt tokens for the context limit: '' estimates
      from characters (3 per token, on the safe side), 'qwen3' is Qwen3's
      tokenizer (bundled with maxtext), anything else a tokenizer.json path.
    regrade: Grade every trajectory again (e.g. with another judge); the
      new records supersede the old ones.
    tool_text: How the system prompt lists the tools: 'json' (schemas, the
      recipe's) or 'signature' (one line a tool: compact prompts for tiny
      models; agent.react.tool_text).
    repeats: Rollouts per question (ids '<task>#0' .. '#N-1'): avg@N and
      pass@N.
    max_failed_share: More failed rollouts than this share of all of them
      fails the eval (no new rollouts start; `eval.run` exits non-zero).
    progress_every_s: Seconds between progress log lines.
  """

  dataset: datasets.DatasetConfig
  mode: str = 'single'
  agent: react.AgentConfig = react.AgentConfig()
  mas: mas_lib.MASConfig = mas_lib.MASConfig()
  grader: grading.GraderConfig = grading.GraderConfig()
  system_prompt: str = 'agent_system.md'
  concurrency: int = 8
  tokenizer: str = ''
  regrade: bool = False
  tool_text: str = 'json'
  repeats: int = 1
  max_failed_share: float = 0.1
  progress_every_s: float = 10.0

  def __post_init__(self):
    if self.tool_text not in react.TOOL_TEXT_STYLES:
      raise ValueError(
          f'tool_text {self.tool_text!r} is not one of'
          f' {react.TOOL_TEXT_STYLES}'
      )
    if self.mode not in MODES:
      raise ValueError(f'eval mode {self.mode!r} is not one of {MODES}')
    if self.concurrency < 1:
      raise ValueError(f'concurrency must be >= 1, got {self.concurrency}')
    if self.repeats < 1:
      raise ValueError(f'repeats must be >= 1, got {self.repeats}')
    if not 0.0 <= self.max_failed_share <= 1.0:
      raise ValueError(
          f'max_failed_share must be in [0, 1], got {self.max_failed_share}'
      )


async def evaluate(
    config: EvalConfig,
    *,
    policy: protocol.LLM,
    judge: protocol.LLM | None,
    toolbox_factory: ToolboxFactory,
    workdir: str | os.PathLike[str],
    describe: Mapping[str, Any],
) -> dict[str, Any]:
  """Runs, grades and reports; returns the report dict.

  Args:
    config: The eval.
    policy: The agent's LLM (every MAS role too).
    judge: The grader LLM; None grades by exact match.
    toolbox_factory: A fresh Toolbox for one agent run on a task.
    workdir: Output directory (created).
    describe: Manifest entries of the caller: 'policy', 'judge' (LLM
      manifests) and 'toolbox' (tool settings).
  """
  out = pathlib.Path(workdir)
  out.mkdir(parents=True, exist_ok=True)
  config = dataclasses.replace(
      config, grader=config.grader.resolve(config.dataset.format)
  )
  tasks = datasets.load(config.dataset)
  by_id = {t.id: t for t in tasks}
  tool_schemas = toolbox_factory(tasks[0]).schemas()
  run_one, prompts = _runner(config, policy, toolbox_factory, tool_schemas)
  traj_path = out / results.TRAJECTORIES
  done = results.finished_ids(traj_path)
  jobs = [
      (t, runner.trajectory_id(t, r))
      for t in tasks
      for r in range(config.repeats)
      if runner.trajectory_id(t, r) not in done
  ]
  grader = rollouts.Grader(config, by_id, judge, out)
  outcome = await rollouts.run_and_grade(
      jobs,
      run_one,
      grader.grade,
      traj_path,
      total=len(tasks) * config.repeats,
      concurrency=config.concurrency,
      write=lambda p, t: results.write_trajectory(p, t, by_id[t.task_id]),
      max_failed_share=config.max_failed_share,
      progress_every_s=config.progress_every_s,
  )
  await rollouts.grade_all(config, by_id, grader, out, skip=outcome.graded)
  latest = results.read_records(out / results.RESULTS)
  records = [
      r
      for r in latest.values()
      if r['task_id'] in by_id
      and metrics.repeat_index(r['traj_id']) < config.repeats
  ]
  manifest = manifest_lib.build(
      dataset=config.dataset,
      questions=len(tasks),
      mode=config.mode,
      agent=config.agent,
      mas=config.mas,
      policy=describe.get('policy', {'name': policy.name}),
      judge=describe.get('judge') if judge else None,
      grader=config.grader,
      tool_schemas=tool_schemas,
      toolbox=describe.get('toolbox', {}),
      prompts=prompts,
      seed=config.agent.seed,
      concurrency=config.concurrency,
  )
  manifest['token_counter'] = config.tokenizer or 'chars/3'
  manifest['tool_text'] = config.tool_text
  manifest['retries'] = {
      'policy_http_attempts': getattr(policy, 'attempts', None),
      'judge_http_attempts': getattr(judge, 'attempts', None),
      'judge_attempts_this_run': grader.attempts,
  }
  summary = metrics.summarize(records)
  summary['failures'] = _failures(config, records, len(tasks), describe)
  summary['failures']['not_started'] = outcome.not_started
  report = {'summary': summary, 'manifest': manifest}
  report_lib.write(out, report)
  if config.dataset.format == 'browsecomp_plus':
    _browsecomp_plus_files(out, by_id, records, manifest)
  for llm in (policy, judge):
    if hasattr(llm, 'aclose'):
      await llm.aclose()  # the HTTP connections of this event loop
  return report


def _runner(config, policy, toolbox_factory, tool_schemas):
  """The per-question coroutine (single agent or MAS) and prompt hashes."""
  system = prompt_lib.load(config.system_prompt)
  system_text = system.render(
      tools=react.tool_text(tool_schemas, config.tool_text)
  )
  agent = react.ReActAgent(policy, config.agent, counter=counter(config))
  prompts = {config.system_prompt: system.sha256}
  if config.agent.context.policy == 'summary':
    summary = prompt_lib.load(config.agent.context.summary_prompt)
    prompts[summary.name] = summary.sha256
  if config.mode == 'mas':
    mas = mas_lib.MultiAgentSystem(
        agent,
        config.mas,
        tool_text=react.tool_text(tool_schemas, config.tool_text),
    )
    prompts.update(mas.prompt_hashes)

    async def run_mas(task, traj_id):
      boxes = []

      def make():
        boxes.append(doc_ids.RecordingToolbox(toolbox_factory(task)))
        return boxes[-1]

      traj = await mas.run(
          traj_id=traj_id,
          task_id=task.id,
          question=task.question,
          system_prompt=system_text,
          toolbox_factory=make,
      )
      return _with_doc_ids(traj, [c for b in boxes for c in b.calls])

    return run_mas, prompts

  async def run_single(task, traj_id):
    toolbox = doc_ids.RecordingToolbox(toolbox_factory(task))
    traj = await agent.run(
        traj_id=traj_id,
        task_id=task.id,
        question=task.question,
        system_prompt=system_text,
        toolbox=toolbox,
        meta={'dataset': config.dataset.name},
    )
    return _with_doc_ids(traj, toolbox.calls)

  return run_single, prompts


def _with_doc_ids(traj, calls):
  """The trajectory with the doc ids of its tool calls (`doc_ids.py`)."""
  return dataclasses.replace(traj, meta={**traj.meta, 'doc_ids': calls})


def counter(config: EvalConfig) -> budgets.TokenCounter:
  """The prompt-token counter the config names."""
  if not config.tokenizer:
    return budgets.CharTokenCounter()
  path = config.tokenizer
  if path == 'qwen3':
    path = tokenizer_lib.maxtext_tokenizer_dir()
  return budgets.TokenizerCounter(tokenizer_lib.load_tokenizer(path))


def _browsecomp_plus_files(out, tasks, records, manifest) -> None:
  """runs/, evaluation_summary.json, detailed_judge_results.csv."""
  policy = manifest['policy_llm']
  toolbox = manifest['tools']['toolbox']
  browsecomp_plus.write(
      out,
      results.latest_trajectories(out / results.TRAJECTORIES, tasks),
      records,
      tasks,
      model=policy.get('openai', {}).get('model') or policy.get('name', ''),
      retriever=(
          f'search_agent fused BM25 views + RRF ({toolbox.get("backend")},'
          f' {toolbox.get("toolset", "default")} tools)'
      ),
      max_tokens=manifest['limits']['max_output_tokens'],
  )


def _failures(config, records, questions, describe) -> dict[str, Any]:
  """summary.failures: failed rollouts, their kinds, and the verdict."""
  total = questions * config.repeats
  f = failures.summarize(
      [r.get('run_error_kind') for r in records if r['status'] == 'failed'],
      total,
      describe.get('policy') or {},
  )
  share = config.max_failed_share
  j = failures.summarize(
      [r.get('judge_error_kind') for r in records if r['correct'] is None],
      total,
      describe.get('judge') or {},
      subject='judge calls',
      role='judge',
  )
  judge_too_many = failures.too_many(j.failed, total, share)
  message = f.message() if f.failed else None
  if judge_too_many and not failures.too_many(f.failed, total, share):
    message = j.message()  # the run failure, when both, comes first
  return {
      'failed': f.failed,
      'rollouts': total,
      'kinds': dict(f.kinds),
      'max_failed_share': share,
      'too_many': failures.too_many(f.failed, total, share) or judge_too_many,
      'message': message,
      'judge_errors': j.failed,
      'judge_kinds': dict(j.kinds),
  }
