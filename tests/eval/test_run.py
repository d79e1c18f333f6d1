"""Pulse tests of `python -m eval.run` and `python -m eval.compare`.

Real index (the bundled 2Wiki corpus), real tools, a scripted policy (the
`tiny` config variant): the test is about the harness and its files.
"""

import importlib.util
import json
import pathlib
import subprocess
import sys

from search_agent.agent import trajectory
from search_agent.evaluation import datasets
from search_agent.evaluation import results
from search_agent.llm.prompts import prompt as prompt_lib

_spec = importlib.util.spec_from_file_location(
    'openai_server',
    pathlib.Path(__file__).parents[1] / 'llm' / 'openai_server.py',
)
openai_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openai_server)


def _run(repo_root, workdir, index, *extra, logs=None):
  out = subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={workdir}',
       f'--config.search.index_dir={index}', *extra],
      cwd=repo_root, capture_output=True, text=True, timeout=300, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  if logs is not None:
    logs.append(out.stdout + out.stderr)
  return json.loads(out.stdout.strip().splitlines()[-1])


def _lines(path):
  return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def test_eval_run_pulse_and_resume(tmp_path, repo_root, tiny_index):
  work = tmp_path / 'run'
  summary = _run(repo_root, work, tiny_index)
  # Only question 1's reference is the scripted answer 'Lothair II'.
  assert summary['pass_at_1'] == 0.25 and summary['questions'] == 4
  assert summary['statuses'] == {'answered': 4}
  trajs = list(trajectory.iter_jsonl(work / results.TRAJECTORIES))
  assert len(trajs) == 4
  for t in trajs:
    assert [m.role for m in t.messages] == [
        'system',
        'user',
        'assistant',
        'tool',
        'assistant',
    ]
    assert t.meta['steps'] == 2 and t.final_answer == 'Lothair II'
    # The observation came from the real index.
    assert '[r1] Teutberga' in t.messages[3].content
    assert '"name": "visit"' in t.messages[0].content  # schemas in prompt
  recs = _lines(work / results.RESULTS)
  assert sorted(r['correct'] for r in recs) == [False, False, False, True]
  assert {r['grade_method'] for r in recs} == {'exact_match'}
  assert all(r['leaked_urls'] == [] for r in recs)
  manifest = json.loads((work / 'manifest.json').read_text())
  assert manifest['tools']['names'] == ['search', 'visit']
  assert manifest['tools']['schemas'][0]['function']['name'] == 'search'
  assert manifest['prompts'] == {
      'agent_system.md': prompt_lib.load('agent_system.md').sha256
  }
  assert manifest['limits']['max_steps'] == 4
  assert manifest['context_policy']['policy'] == 'discard_all'
  assert manifest['judge']['method'] == 'exact_match'
  assert manifest['sampling']['seed'] == 0
  assert manifest['dataset']['questions'] == 4
  assert len(manifest['code_version']) == 40
  report = (work / 'report.md').read_text()
  assert (
      '| pass@1 (headline: a judge failure counts wrong) | 25.0% (1/4) |'
      in report
  )
  # Rerun: nothing left to run or grade; the files do not grow.
  again = _run(repo_root, work, tiny_index)
  assert again == summary
  assert len(_lines(work / results.RESULTS)) == 4
  assert len(_lines(work / results.TRAJECTORIES)) == 4
  # Regrade: same trajectories, every record graded again.
  assert _run(repo_root, work, tiny_index, '--config.regrade=True') == summary
  assert len(_lines(work / results.RESULTS)) == 8
  assert len(_lines(work / results.TRAJECTORIES)) == 4


def test_encrypted_benchmark_leaves_no_plaintext(
    tmp_path, repo_root, tiny_index, shared_data
):
  path = shared_data / 'benchmarks' / 'xbench-DeepSearch-2505.csv'
  work = tmp_path / 'xbench'
  logs = []
  summary = _run(
      repo_root, work, tiny_index,
      '--config.dataset.name=xbench', '--config.dataset.format=xbench',
      f'--config.dataset.path={path}', '--config.dataset.limit=2', logs=logs,
  )  # fmt: skip
  assert summary['questions'] == 2
  config = datasets.DatasetConfig(
      name='xbench', format='xbench', path=str(path), limit=2
  )
  tasks = {t.id: t for t in datasets.load(config)}
  written = ''.join(p.read_text() for p in work.iterdir() if p.is_file())
  written += logs[0]  # nor in what the binary prints
  for t in tasks.values():
    assert t.question not in written and t.answer not in written
    assert t.question[:12] not in written
  recs = _lines(work / results.RESULTS)
  assert all(r['redacted'] and 'question' not in r for r in recs)
  trajs = list(results.read_trajectories(work / results.TRAJECTORIES, tasks))
  assert {t.task_id for t in trajs} == set(tasks)
  assert trajs[0].messages[1].content == tasks[trajs[0].task_id].question


def test_compare_pulse(tmp_path, repo_root, tiny_index):
  a, b = tmp_path / 'cm', tmp_path / 'nocm'
  _run(repo_root, a, tiny_index)
  _run(repo_root, b, tiny_index, '--config.context.policy=none')
  out = subprocess.run(
      [sys.executable, '-m', 'eval.compare', f'--runs={a},{b}',
       '--names=discard_all,none', f'--out={tmp_path / "cmp"}'],
      cwd=repo_root, capture_output=True, text=True, timeout=120, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  md = (tmp_path / 'cmp' / 'compare.md').read_text()
  assert '| pass@1 | 25.0% | 25.0% | +0.0 pp |' in md
  assert '| context policy | discard_all | none |  |' in md
  assert 'WARNING' not in md
  assert 'eval.compare: paired 4 questions' in out.stderr
  png = (tmp_path / 'cmp' / 'compare.png').read_bytes()
  assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 10_000
  paired = json.loads((tmp_path / 'cmp' / 'compare.json').read_text())
  assert paired['paired']['both_correct'] == 1
  assert paired['paired']['neither'] == 3


def test_eval_run_against_openai_compatible_endpoints(
    tmp_path, repo_root, tiny_index
):
  """Policy and judge over real HTTP (a local scripted server)."""
  search = '{"name": "search", "arguments": {"query": ["Ermengarde"]}}'
  flaky = {'n': 0}

  def serve(body):
    first = body['messages'][0]['content']
    if first.startswith('Judge whether'):
      flaky['n'] += 1
      if flaky['n'] == 1:
        return 500, 'judge overloaded'  # retried by the client
      ok = '[correct_answer]: Hugh of Tours' in first
      verdict = 'yes' if ok else 'no'
      return 200, openai_server.reply(
          f'extracted_final_answer: Hugh of Tours\ncorrect: {verdict}\n'
          'confidence: 90'
      )
    steps = sum(m['role'] == 'assistant' for m in body['messages'])
    if steps == 0:
      return 200, openai_server.reply(f'<tool_call>{search}</tool_call>')
    return 200, openai_server.reply(
        'Confidence: 90%\n<answer>Hugh of Tours</answer>',
        reasoning='Her father is named on her page.',
    )

  server = openai_server.ScriptedServer(serve)
  work = tmp_path / 'http'
  endpoint = [
      f'--config.{role}.{field}'
      for role in ('policy', 'judge')
      for field in (
          'kind=openai', f'openai.base_url={server.base_url}',
          f'openai.model={role}-model', 'openai.backoff_s=0.01',
      )
  ]  # fmt: skip
  with server.running():
    summary = _run(repo_root, work, tiny_index, *endpoint)
  assert summary['pass_at_1'] == 0.25 and summary['judge_errors'] == 0
  manifest = json.loads((work / 'manifest.json').read_text())
  assert manifest['policy_llm']['openai']['model'] == 'policy-model'
  assert manifest['judge']['llm']['openai']['model'] == 'judge-model'
  assert manifest['judge']['template_sha256'] == (
      prompt_lib.load('browsecomp_grader.txt').sha256
  )
  # 8 policy calls + 4 judge calls + 1 retried 500 = 13 HTTP attempts.
  assert manifest['retries']['policy_http_attempts'] == 8
  assert manifest['retries']['judge_http_attempts'] == 5
  assert len(server.requests) == 13
  trajs = list(trajectory.iter_jsonl(work / results.TRAJECTORIES))
  assert trajs[0].messages[-1].reasoning == 'Her father is named on her page.'
  recs = _lines(work / results.RESULTS)
  assert {r['grade_method'] for r in recs} == {'judge'}
  assert {r['extracted_answer'] for r in recs} == {'Hugh of Tours'}
