"""Loud failures: a policy endpoint that refuses connections or returns 500s
ends `eval.run` non-zero with one line naming the cause (real local
servers, the real binary); error kinds stay readable for encrypted data."""

import asyncio
import importlib.util
import json
import pathlib
import socket
import subprocess
import sys

from search_agent.evaluation import config as config_lib
from search_agent.evaluation import datasets
from search_agent.evaluation import failures
from search_agent.evaluation import harness
from search_agent.evaluation import results
from search_agent.llm import protocol

_spec = importlib.util.spec_from_file_location(
    'openai_server',
    pathlib.Path(__file__).parents[1] / 'llm' / 'openai_server.py',
)
openai_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openai_server)


def _closed_port_url() -> str:
  """A local URL where nothing listens (the port was bound, then freed)."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  return f'http://127.0.0.1:{port}/v1'


def _run(repo_root, workdir, index, base_url, *extra):
  return subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={workdir}',
       f'--config.search.index_dir={index}', '--config.policy.kind=openai',
       f'--config.policy.openai.base_url={base_url}',
       '--config.policy.openai.model=pol', '--config.policy.openai.backoff_s=0.01',
       '--config.policy.openai.max_retries=1', '--config.concurrency=1',
       *extra],
      cwd=repo_root, capture_output=True, text=True, timeout=300, check=False,
  )  # fmt: skip


def test_refused_connection_exits_nonzero_with_one_line(
    tmp_path, repo_root, tiny_index
):
  url = _closed_port_url()
  out = _run(repo_root, tmp_path / 'w', tiny_index, url)
  assert out.returncode == 1
  last = out.stderr.strip().splitlines()[-1]
  assert last == (
      'eval.run failed: 1 of 4 rollouts failed [LLMError: ConnectError x1]'
      f" (policy {url} model 'pol'): nothing answers there: start the server"
      ' or fix the base_url'
  )
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['failures']['too_many'] and summary['failures']['failed'] == 1
  # Concurrency 1: the first failure decides (1 > 0.1 * 4); 3 never started.
  report = json.loads((tmp_path / 'w' / 'report.json').read_text())
  assert report['summary']['failures']['not_started'] == 3
  assert 'eval: 1/4 rollouts done' in out.stderr  # the progress line


def test_http_500_on_an_encrypted_benchmark_keeps_the_error_kind(
    tmp_path, repo_root, tiny_index, shared_data
):
  server = openai_server.ScriptedServer(lambda body: (500, 'boom'))
  xbench = shared_data / 'benchmarks' / 'xbench-DeepSearch-2505.csv'
  with server.running():
    out = _run(
        repo_root, tmp_path / 'x', tiny_index, server.base_url,
        '--config.dataset.format=xbench', '--config.dataset.name=xbench',
        f'--config.dataset.path={xbench}', '--config.dataset.limit=3',
        '--config.concurrency=3',
    )  # fmt: skip
  assert out.returncode == 1
  last = out.stderr.strip().splitlines()[-1]
  assert '3 of 3 rollouts failed [LLMError: HTTP 500 x3]' in last
  assert server.base_url in last and "read the server's log" in last
  recs = results.read_records(tmp_path / 'x' / results.RESULTS).values()
  assert len(recs) == 3
  for r in recs:
    assert r['redacted'] and r['run_error_kind'] == 'LLMError: HTTP 500'
    assert r['run_error'] == 'LLMError (message redacted)'


def test_a_share_under_the_limit_passes(tmp_path, repo_root, tiny_index):
  """With max_failed_share=1.0 even an eval of failures exits 0."""
  out = _run(
      repo_root, tmp_path / 'w', tiny_index, _closed_port_url(),
      '--config.max_failed_share=1.0', '--config.dataset.limit=2',
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['statuses'] == {'failed': 2}
  assert not summary['failures']['too_many']


def test_error_kinds_of_the_clients_messages():
  kind = failures.error_kind
  assert kind(
      "LLMError: http://h:1/v1 model 'm': gave up after 2 attempts; last"
      ' error: request error ConnectError: All connection attempts failed'
  ) == ('LLMError: ConnectError')
  assert kind(
      'LLMError: http://h/v1 returned HTTP 404 for model (not retried): x'
  ) == ('LLMError: HTTP 404')
  assert kind('LLMError: last error: timeout (ReadTimeout)') == (
      'LLMError: timeout ReadTimeout'
  )
  assert kind('RuntimeError: the question "Q"') == 'RuntimeError'
  assert kind(None) is None
  assert failures.too_many(1, 4, 0.1) and not failures.too_many(1, 10, 0.1)
  assert not failures.too_many(0, 4, 0.0)


class _WaitsForTheFirstGrade:
  """A policy whose run of question 2 answers only once question 1's
  result record is on disk: it finishes only if grading streams."""

  name = 'waits'

  def __init__(self, results_path):
    self.results_path = results_path

  async def chat(self, messages, params):
    del params
    if 'second son' in messages[1]['content']:
      for _ in range(200):
        if self.results_path.is_file() and self.results_path.read_text():
          break
        await asyncio.sleep(0.05)
      else:
        raise AssertionError('question 1 was not graded while 2 ran')
    return [protocol.Completion(text='<answer>Lothair II</answer>')]


def test_grading_streams_while_rollouts_run(tmp_path, repo_root, tiny_index):
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
  policy = _WaitsForTheFirstGrade(tmp_path / results.RESULTS)
  with config_lib.toolbox_factory(search, None) as factory:
    report = asyncio.run(
        harness.evaluate(
            config,
            policy=policy,
            judge=None,
            toolbox_factory=factory,
            workdir=tmp_path,
            describe={},
        )
    )
  s = report['summary']
  assert s['statuses'] == {'answered': 2} and s['correct'] == 1
  assert s['failures']['failed'] == 0 and not s['failures']['too_many']


def test_a_dead_judge_fails_the_eval_too(tmp_path, repo_root, tiny_index):
  url = _closed_port_url()
  out = subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={tmp_path}',
       f'--config.search.index_dir={tiny_index}', '--config.judge.kind=openai',
       f'--config.judge.openai.base_url={url}', '--config.judge.openai.model=j',
       '--config.judge.openai.max_retries=0', '--config.grader.max_attempts=2',
       '--config.grader.backoff_s=0.0'],
      cwd=repo_root, capture_output=True, text=True, timeout=300, check=False,
  )  # fmt: skip
  assert out.returncode == 1
  assert out.stderr.strip().splitlines()[-1] == (
      'eval.run failed: 4 of 4 judge calls failed [LLMError: ConnectError x4]'
      f" (judge {url} model 'j'): nothing answers there: start the server or"
      ' fix the base_url'
  )
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['pass_at_1_strict'] == 0.0 and summary['pass_at_1'] is None
  recs = results.read_records(tmp_path / results.RESULTS).values()
  assert {r['judge_error_kind'] for r in recs} == {'LLMError: ConnectError'}
