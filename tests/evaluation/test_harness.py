"""The eval harness in process: MAS mode, a judge over real HTTP whose
failures are errors (not "no") and are re-graded on the next run."""

import asyncio
import importlib.util
import json
import pathlib

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import react
from search_agent.evaluation import comparison
from search_agent.evaluation import config as config_lib
from search_agent.evaluation import datasets
from search_agent.evaluation import grading
from search_agent.evaluation import harness
from search_agent.evaluation import results
from search_agent.llm import openai_client
from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm import scripted

_spec = importlib.util.spec_from_file_location(
    'openai_server',
    pathlib.Path(__file__).parents[1] / 'llm' / 'openai_server.py',
)
openai_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openai_server)

SEARCH = '{"name": "search", "arguments": {"query": ["Lothair II emperor"]}}'
SCRIPT = (
    f'<tool_call>{SEARCH}</tool_call>',
    'Confidence: 70%\n<answer>Lothair II</answer>',
)
VERDICT = (
    'extracted_final_answer: Lothair II\nreasoning: r\ncorrect: {}\n'
    'confidence: 70'
)


def _evaluate(workdir, index, judge_url, repo_root):
  config = harness.EvalConfig(
      dataset=datasets.DatasetConfig(
          name='demo',
          format='tasks',
          path=str(repo_root / 'eval/data/2wiki_demo_tasks.jsonl'),
          limit=2,
      ),
      mode='mas',
      grader=grading.GraderConfig(max_attempts=2, backoff_s=0.0),
      concurrency=2,
  )
  policy = registry.build(
      registry.from_dict({'kind': 'scripted', 'script': SCRIPT})
  )
  judge = openai_client.OpenAIClient(
      openai_client.OpenAIConfig(
          base_url=judge_url, model='judge', max_retries=0, timeout_s=5.0
      )
  )
  search = {
      'index_dir': str(index),
      'url': '',
      'tools': ('search',),
      'top_k': 3,
      'rerank': False,
  }
  with config_lib.toolbox_factory(search, None) as factory:
    return asyncio.run(
        harness.evaluate(
            config,
            policy=policy,
            judge=judge,
            toolbox_factory=factory,
            workdir=workdir,
            describe={'judge': {'name': 'judge'}, 'toolbox': factory.manifest},
        )
    )


def test_mas_eval_with_failing_then_working_judge(
    tmp_path, tiny_index, repo_root
):
  down = openai_server.ScriptedServer(lambda b: (503, 'overloaded'))
  with down.running():
    report = _evaluate(tmp_path, tiny_index, down.base_url, repo_root)
  s = report['summary']
  assert s['questions'] == 2 and s['graded'] == 0 and s['judge_errors'] == 2
  assert s['pass_at_1'] is None  # errors are not counted as "no"
  assert s['judge_attempts'] == 4
  assert report['manifest']['retries']['judge_attempts_this_run'] == 4
  recs = results.read_records(tmp_path / results.RESULTS)
  assert all('attempt 2: LLMError' in r['judge_error'] for r in recs.values())

  def verdict(body):
    prompt = body['messages'][0]['content']
    ok = '[correct_answer]: Lothair II' in prompt
    return 200, openai_server.reply(VERDICT.format('yes' if ok else 'no'))

  up = openai_server.ScriptedServer(verdict)
  with up.running():
    report = _evaluate(tmp_path, tiny_index, up.base_url, repo_root)
  s = report['summary']
  assert (s['graded'], s['correct'], s['judge_errors']) == (2, 1, 0)
  assert len(up.requests) == 2  # only the two errors were re-graded
  lines = (tmp_path / results.RESULTS).read_text().splitlines()
  assert len(lines) == 4  # append-only; the later record wins
  # MAS: the verifier's trajectory holds both searchers.
  traj = json.loads(
      (tmp_path / results.TRAJECTORIES).read_text().splitlines()[0]
  )
  assert traj['meta']['mas_role'] == 'verifier'
  assert len(traj['meta']['mas']['searchers']) == 2
  assert report['manifest']['mode'] == 'mas'
  # Tool calls count the whole system: 2 searchers + the verifier, 1 each.
  assert s['tools']['calls_mean'] == 3.0
  rec = next(iter(results.read_records(tmp_path / results.RESULTS).values()))
  assert rec['verifier_tool_calls'] == 1
  assert set(report['manifest']['prompts']) == {
      'agent_system.md',
      'mas_verifier.md',
      'mas_attempts.md',
  }
  assert report['manifest']['judge']['template'] == 'browsecomp_grader.txt'


def test_failed_runs_are_rerun_and_regraded(tmp_path, tiny_index, repo_root):
  config = harness.EvalConfig(
      dataset=datasets.DatasetConfig(
          name='demo',
          format='tasks',
          path=str(repo_root / 'eval/data/2wiki_demo_tasks.jsonl'),
          limit=2,
      ),
      concurrency=2,
  )
  search = {'index_dir': str(tiny_index), 'url': '', 'tools': ('search',),
            'top_k': 3, 'rerank': False}  # fmt: skip

  def evaluate(policy):
    with config_lib.toolbox_factory(search, None) as factory:
      return asyncio.run(
          harness.evaluate(
              config,
              policy=policy,
              judge=None,
              toolbox_factory=factory,
              workdir=tmp_path,
              describe={},
          )
      )

  down = scripted.ScriptedLLM([protocol.LLMError('endpoint down')] * 2)
  s = evaluate(down)['summary']
  assert s['statuses'] == {'failed': 2} and s['grade_methods'] == {
      'run_failed': 2
  }
  assert s['pass_at_1'] == 0.0  # a failed run is a failure, and visible
  up = registry.build(
      registry.from_dict({'kind': 'scripted', 'script': SCRIPT})
  )
  s = evaluate(up)['summary']
  assert s['statuses'] == {'answered': 2} and s['correct'] == 1
  assert s['grade_methods'] == {'exact_match': 2}
  lines = (tmp_path / results.TRAJECTORIES).read_text().splitlines()
  assert len(lines) == 4  # append-only: the reruns supersede the failures


def _long_horizon(messages):
  """Six searches, then the answer; counts searches carried in reset notes."""
  text = ' '.join(m['content'] for m in messages if m['role'] == 'user')
  done = text.count('called search') + sum(
      m['role'] == 'assistant' for m in messages
  )
  if done < 6:
    body = {'name': 'search', 'arguments': {'query': [f'Lothair {done}']}}
    return f'<tool_call>{json.dumps(body)}</tool_call>'
  return 'Confidence: 60%\n<answer>Lothair II</answer>'


def test_context_management_on_vs_off(tmp_path, tiny_index, repo_root):
  """iris.md's point on a small context: without CM the run hits the limit."""
  search = {'index_dir': str(tiny_index), 'url': '', 'tools': ('search',),
            'top_k': 10, 'rerank': False}  # fmt: skip
  reports = {}
  for policy in ('none', 'discard_all'):
    config = harness.EvalConfig(
        dataset=datasets.DatasetConfig(
            name='demo',
            format='tasks',
            path=str(repo_root / 'eval/data/2wiki_demo_tasks.jsonl'),
        ),
        agent=react.AgentConfig(
            budgets=budgets.Budgets(
                max_steps=20, context_limit=6_000, min_output_tokens=256
            ),
            context=managed_context.ContextConfig(policy=policy),
        ),
        concurrency=4,
    )
    with config_lib.toolbox_factory(search, None) as factory:
      reports[policy] = asyncio.run(
          harness.evaluate(
              config,
              policy=scripted.ScriptedLLM(_long_horizon),
              judge=None,
              toolbox_factory=factory,
              workdir=tmp_path / policy,
              describe={},
          )
      )
  off, on = reports['none']['summary'], reports['discard_all']['summary']
  assert off['statuses'] == {'context_limit': 4} and off['pass_at_1'] == 0.0
  assert off['budgets_hit'] == {'context_limit': 4}
  assert on['statuses'] == {'answered': 4} and on['pass_at_1'] == 0.25
  assert on['tools']['calls_mean'] == 6.0
  recs = results.read_records(tmp_path / 'discard_all' / results.RESULTS)
  assert all(r['context_resets'] >= 1 for r in recs.values())
  out = comparison.compare(
      [str(tmp_path / 'none'), str(tmp_path / 'discard_all')],
      ['no CM', 'discard-all'],
      tmp_path / 'cmp',
  )
  assert out['paired']['only_b'] == 1 and out['paired']['only_a'] == 0
  md = (tmp_path / 'cmp' / 'compare.md').read_text()
  assert '| pass@1 | 0.0% | 25.0% | +25.0 pp |' in md
  # Discard-all keeps the peak context lower than running into the limit.
  assert on['context']['resets'] >= 4
  assert on['context']['peak_prompt_tokens_max'] < 6_000 * 0.8 + 2_000
  assert off['context']['peak_prompt_tokens_max'] <= 6_000 - 256
