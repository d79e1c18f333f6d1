r"""Collects teacher demonstrations in the real environment.

  python -m search_agent.pipeline.collect --tasks=TASKS.jsonl \
      --index_dir=DIR/index --workdir=OUT [--rollouts=3] [--tools=search] \
      [--top_k=3] [--snippet_words=0] [--system_prompt=agent_system.md] \
      [--tool_text=json] [--teacher=programmatic | --teacher=openai \
      --teacher_base_url=URL --teacher_model=NAME]

Each task runs `--rollouts` times through the ReAct loop with a fresh
Toolbox over the embedded index, exactly as `eval.run` would run it (same
system prompt, tool text, top_k and snippet length), and every trajectory is
appended to OUT/trajectories.jsonl (an interrupted run resumes); at the end
the file is rewritten in task order, rollouts by index, so what filtering
keeps (first rollouts per task, first of duplicates) and hence SFT's data do
not depend on which rollouts finished first. The teacher
is the programmatic stand-in (search_agent/agent/teacher.py) unless an
OpenAI-compatible endpoint is given. OUT/manifest.json names the teacher and
the environment; OUT/summary.json counts statuses, recoveries and tool calls.
"""

import asyncio
import collections
import dataclasses
import json
import os

from absl import app
from absl import flags

from search_agent.agent import budgets
from search_agent.agent import react
from search_agent.agent import runner
from search_agent.agent import task as task_lib
from search_agent.agent import teacher as teacher_lib
from search_agent.agent import trajectory
from search_agent.llm import openai_client
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.pipeline import environment

_TASKS = flags.DEFINE_string('tasks', None, 'Task JSONL.')
_INDEX = flags.DEFINE_string(
    'index_dir',
    None,
    "Tantivy index directory, or a cluster build's (search/locations.py).",
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
_LIMIT = flags.DEFINE_integer('limit', 0, 'First N tasks; 0 = all.')
_ROLLOUTS = flags.DEFINE_integer('rollouts', 3, 'Rollouts per task.')
_TOOLS = flags.DEFINE_list('tools', ['search', 'visit'], 'Tools offered.')
_TOP_K = flags.DEFINE_integer('top_k', 10, 'Results per query.')
_SNIPPET = flags.DEFINE_integer('snippet_words', 0, 'Excerpt words; 0 = 48.')
_PROMPT = flags.DEFINE_string('system_prompt', 'agent_system.md', 'Prompt.')
_TOOL_TEXT = flags.DEFINE_enum(
    'tool_text', 'json', react.TOOL_TEXT_STYLES, 'Tools in the prompt.'
)
_MAX_STEPS = flags.DEFINE_integer('max_steps', 8, 'Agent steps per rollout.')
_TEACHER = flags.DEFINE_enum(
    'teacher', 'programmatic', ('programmatic', 'openai'), 'Teacher kind.'
)
_BASE_URL = flags.DEFINE_string('teacher_base_url', '', 'openai: API root.')
_MODEL = flags.DEFINE_string('teacher_model', '', 'openai: model name.')
_VISIT = flags.DEFINE_bool('visit', False, 'Programmatic: visit pages found.')
_VISIT_WHEN = flags.DEFINE_enum(
    'visit_when',
    'always',
    teacher_lib.VISIT_WHEN,
    'Programmatic, with --visit: every page found, or only when its search'
    ' results lack what the next step needs.',
)
_RECOVERY = flags.DEFINE_float('recovery_rate', 0.2, 'Broken first calls.')
_THINK = flags.DEFINE_bool('think', False, 'Programmatic: <think> lines.')
_QUOTE = flags.DEFINE_float('quote_rate', 0.5, 'Quoted first queries.')
_VALUE_SPACE = flags.DEFINE_bool(
    'value_space', False, 'Programmatic: a space before copied values.'
)
_NAME_RELATION = flags.DEFINE_bool(
    'name_relation', False, 'Programmatic: a <think> naming the relation.'
)
_QUESTION_QUERY = flags.DEFINE_bool(
    'question_query', False, 'Programmatic: the question as the first query.'
)
_CONCURRENCY = flags.DEFINE_integer('concurrency', 8, 'Rollouts in flight.')


def summarize(trajs: list[trajectory.Trajectory], tasks) -> dict:
  """Statuses, exact-match accuracy, recoveries and tool calls."""
  by_id = {t.id: t for t in tasks}
  statuses = collections.Counter(t.status for t in trajs)
  correct = sum(
      t.final_answer is not None
      and teacher_lib.find_answer(by_id[t.task_id], [t.final_answer])
      is not None
      for t in trajs
  )
  invalid = sum(
      any(m.invalid for m in t.messages if m.role == 'assistant') for t in trajs
  )
  calls = collections.Counter(len(t.tool_calls) for t in trajs)
  return {
      'trajectories': len(trajs),
      'statuses': dict(statuses),
      'answer_matches': correct,
      'with_invalid_turn': invalid,
      'tool_calls_histogram': {str(k): v for k, v in sorted(calls.items())},
  }


async def collect(tasks, env: environment.Environment, out_dir: str) -> dict:
  """Runs every rollout not yet in out_dir/trajectories.jsonl."""
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=_MAX_STEPS.value,
          max_output_tokens=4_096,
          context_limit=65_536,
          min_output_tokens=256,
      ),
      temperature=0.0,
  )
  teacher_cfg = teacher_lib.TeacherConfig(
      visit=_VISIT.value,
      visit_when=_VISIT_WHEN.value,
      recovery_rate=_RECOVERY.value,
      think=_THINK.value,
      quote_rate=_QUOTE.value,
      value_space=_VALUE_SPACE.value,
      name_relation=_NAME_RELATION.value,
      question_query=_QUESTION_QUERY.value,
  )
  endpoint = None
  if _TEACHER.value == 'openai':
    endpoint = openai_client.OpenAIClient(
        openai_client.OpenAIConfig(base_url=_BASE_URL.value, model=_MODEL.value)
    )
  path = os.path.join(out_dir, 'trajectories.jsonl')
  with environment.open_toolboxes(env) as make_toolbox:
    system = env.system_text(make_toolbox().schemas())

    async def run_one(task: task_lib.Task, traj_id: str):
      llm = endpoint or teacher_lib.ProgrammaticTeacher(
          task, teacher_cfg, seed=traj_id, tools=env.tools
      )
      agent = react.ReActAgent(llm, config)
      return await agent.run(
          traj_id=traj_id,
          task_id=task.id,
          question=task.question,
          system_prompt=system,
          toolbox=make_toolbox(),
          meta={'teacher': llm.name, 'answer': task.answer},
      )

    await runner.run_all(
        tasks,
        run_one,
        path,
        max_concurrency=_CONCURRENCY.value,
        samples=_ROLLOUTS.value,
    )
  runner.rewrite_in_task_order(path, tasks, samples=_ROLLOUTS.value)
  errors: list[trajectory.LineError] = []
  trajs = list(trajectory.iter_jsonl(path, errors))
  name = endpoint.name if endpoint else teacher_lib.NAME
  return {
      'teacher': {
          'kind': _TEACHER.value,
          'name': name,
          'stand_in': endpoint is None,
          'config': dataclasses.asdict(teacher_cfg),
      },
      'environment': dataclasses.asdict(env),
      'prompt_sha256': prompt_lib.load(env.system_prompt).sha256,
      'rollouts_per_task': _ROLLOUTS.value,
      'tasks': len(tasks),
      'summary': summarize(trajs, tasks),
  }


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  tasks = list(task_lib.iter_tasks(_TASKS.value))
  tasks = tasks[: _LIMIT.value] if _LIMIT.value else tasks
  env = environment.Environment(
      index_dir=_INDEX.value,
      tools=tuple(_TOOLS.value),
      top_k=_TOP_K.value,
      snippet_words=_SNIPPET.value,
      system_prompt=_PROMPT.value,
      tool_text=_TOOL_TEXT.value,
  )
  os.makedirs(_WORKDIR.value, exist_ok=True)
  manifest = asyncio.run(collect(tasks, env, _WORKDIR.value))
  with open(os.path.join(_WORKDIR.value, 'manifest.json'), 'w') as f:
    json.dump(manifest, f, indent=1)
  print(json.dumps(manifest['summary']))


if __name__ == '__main__':
  flags.mark_flags_as_required(['tasks', 'index_dir', 'workdir'])
  app.run(main)
