"""The eval behind `python -m eval.run`: run, grade, report.

1. Every question not yet in `trajectories.jsonl` (or whose run failed)
   runs as a single ReAct agent or as the MAS, `concurrency` at a time
   (crashes become 'failed' trajectories; an interrupted eval resumes).
2. Every trajectory without a result, or whose judge failed before, is
   graded (`grading.py`) and appended to `results.jsonl`.
3. `report.json`, `report.md` and `manifest.json` are written from the
   latest result per question (metrics in `metrics.py`).
"""

import asyncio
import dataclasses
import os
import pathlib
from typing import Any, Callable, Mapping

from eval import datasets
from eval import grading
from eval import manifest as manifest_lib
from eval import metrics
from eval import report as report_lib
from eval import results
from search_agent.agent import budgets
from search_agent.agent import mas as mas_lib
from search_agent.agent import react
from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import tokenizer as tokenizer_lib
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
  tasks = datasets.load(config.dataset)
  by_id = {t.id: t for t in tasks}
  tool_schemas = toolbox_factory(tasks[0]).schemas()
  run_one, prompts = _runner(config, policy, toolbox_factory, tool_schemas)
  traj_path = out / results.TRAJECTORIES
  await runner.run_all(
      tasks,
      run_one,
      traj_path,
      max_concurrency=config.concurrency,
      write=lambda p, t: results.write_trajectory(p, t, by_id[t.task_id]),
      done=results.finished_ids(traj_path),
  )
  judge_attempts = await grade_all(config, by_id, judge, out)
  latest = results.read_records(out / results.RESULTS)
  records = [r for r in latest.values() if r['task_id'] in by_id]
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
      'judge_attempts_this_run': judge_attempts,
  }
  report = {'summary': metrics.summarize(records), 'manifest': manifest}
  report_lib.write(out, report)
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
      return await mas.run(
          traj_id=traj_id,
          task_id=task.id,
          question=task.question,
          system_prompt=system_text,
          toolbox_factory=lambda: toolbox_factory(task),
      )

    return run_mas, prompts

  async def run_single(task, traj_id):
    return await agent.run(
        traj_id=traj_id,
        task_id=task.id,
        question=task.question,
        system_prompt=system_text,
        toolbox=toolbox_factory(task),
        meta={'dataset': config.dataset.name},
    )

  return run_single, prompts


def counter(config: EvalConfig) -> budgets.TokenCounter:
  """The prompt-token counter the config names."""
  if not config.tokenizer:
    return budgets.CharTokenCounter()
  path = config.tokenizer
  if path == 'qwen3':
    path = tokenizer_lib.maxtext_tokenizer_dir()
  return budgets.TokenizerCounter(tokenizer_lib.load_tokenizer(path))


async def grade_all(
    config: EvalConfig,
    tasks: Mapping[str, task_lib.Task],
    judge: protocol.LLM | None,
    out: pathlib.Path,
) -> int:
  """Grades trajectories that lack a result or whose judge failed."""
  latest = results.read_records(out / results.RESULTS)

  def stale(t) -> bool:
    rec = latest.get(t.id)
    return (
        config.regrade
        or rec is None
        or rec['correct'] is None
        or rec['status'] != t.status  # the run was redone
    )

  trajs = results.latest_trajectories(out / results.TRAJECTORIES, tasks)
  todo = [t for t in trajs if t.task_id in tasks and stale(t)]
  semaphore = asyncio.Semaphore(config.concurrency)
  attempts = 0

  async def one(traj):
    nonlocal attempts
    task = tasks[traj.task_id]
    async with semaphore:
      grade = await grading.grade(
          task,
          results.final_reply(traj),
          traj.final_answer,
          judge,
          config.grader,
          no_answer_method=(
              'run_failed' if traj.status == 'failed' else 'no_answer'
          ),
      )
    attempts += grade.attempts
    rec = results.record(task, traj, grade, config.dataset.name)
    results.append_record(out / results.RESULTS, rec)

  await asyncio.gather(*(one(t) for t in todo))
  return attempts
