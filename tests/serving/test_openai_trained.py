"""A trained checkpoint behind `python -m search_agent.serving`: `eval.run`
with `policy.kind=openai` grades as the in-process policy does.

The served model is the shipped tiny SFT policy
(search_agent/train/rl/data/tiny_policy, made by the project's binaries),
so its answers are real text, not budget-cut noise.
"""

import json
import os
import pathlib
import subprocess
import sys

import httpx
import pytest

from search_agent.agent import trajectory
from search_agent.corpus.sources import CorpusSpec
from search_agent.evaluation import results
from search_agent.search.tantivy_build import build_tantivy_index
from search_agent.serving import local

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]
POLICY = REPO / 'search_agent/train/rl/data/tiny_policy'
# Questions of the kind the policy was trained on (the RL tiny pool).
TASKS = REPO / 'search_agent/train/rl/data/tiny_tasks.jsonl'
# The environment the tiny policy was trained in (tpu_configs/rl.py:tiny,long).
COMPACT = (
    '--config.system_prompt=agent_system_compact.md',
    '--config.tool_text=signature',
    "--config.search.tools=('search',)",
    '--config.search.top_k=3',
    '--config.search.snippet_words=24',
)
MAX_NEW, CONTEXT = 64, 2048
N = 8  # questions


@pytest.fixture(scope='module')
def trained_server(tmp_path_factory):
  """The base URL of a server process with the tiny policy's weights."""
  log = tmp_path_factory.mktemp('trained') / 'server.log'
  spec = local.ServerSpec(
      config=f'{REPO}/tpu_configs/serve.py:tiny',
      overrides={
          'host': '127.0.0.1',
          'model.checkpoint_dir': str(POLICY),
          'tokenizer': f'{POLICY}/tokenizer',
          'engine.max_context': str(CONTEXT),
          'engine.max_new_tokens': str(MAX_NEW),
          'engine.slots': '4',
      },
      log=str(log),
  )
  env = dict(os.environ, XLA_FLAGS='--xla_force_host_platform_device_count=1')
  with local.started([spec], env, timeout_s=600.0) as (url,):
    yield url


@pytest.fixture(scope='module')
def corpus_index(tmp_path_factory):
  """The whole bundled 2Wiki corpus, indexed (the RL tiny run's index)."""
  path = tmp_path_factory.mktemp('trained_index') / 'index'
  build_tantivy_index(CorpusSpec(), path)
  return path


def _eval(workdir, index, *policy):
  return subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={workdir}',
       f'--config.dataset.path={TASKS}', f'--config.dataset.limit={N}',
       f'--config.search.index_dir={index}', *COMPACT, *policy,
       '--config.agent.max_steps=3', f'--config.agent.context_limit={CONTEXT}',
       f'--config.agent.max_output_tokens={MAX_NEW}',
       '--config.agent.min_output_tokens=8', '--config.agent.temperature=0.0',
       '--config.concurrency=4', '--config.dataset.name=tiny-rl'],
      cwd=REPO, capture_output=True, text=True, timeout=900,
      check=False,
  )  # fmt: skip


def _run(workdir):
  grades = {
      qid: (r['correct'], r['prediction'])
      for qid, r in results.read_records(workdir / results.RESULTS).items()
  }
  turns = {
      t.task_id: [m.content for m in t.messages if m.role == 'assistant']
      for t in trajectory.iter_jsonl(workdir / results.TRAJECTORIES)
  }
  return grades, turns


def test_openai_policy_grades_as_the_in_process_one(
    trained_server, corpus_index, tmp_path
):
  url = trained_server
  served = _eval(
      tmp_path / 'openai', corpus_index,
      '--config.policy.kind=openai', '--config.policy.name=tiny-policy',
      f'--config.policy.openai.base_url={url}/v1',
      '--config.policy.openai.model=tiny',
      '--config.policy.openai.logprobs=True',
      '--config.policy.openai.return_token_ids=True',
  )  # fmt: skip
  assert served.returncode == 0, served.stderr[-3000:]
  local = _eval(
      tmp_path / 'sampler', corpus_index,
      '--config.policy.kind=sampler', '--config.policy.name=tiny-policy',
      f'--config.sampler.checkpoint_dir={POLICY}',
      f'--config.sampler.tokenizer={POLICY}/tokenizer',
      f'--config.sampler.max_prompt_len={CONTEXT - MAX_NEW}',
      f'--config.sampler.max_new_tokens={MAX_NEW}',
      '--config.sampler.batch_size=4', '--config.sampler.devices=1',
  )  # fmt: skip
  assert local.returncode == 0, local.stderr[-3000:]
  grades, turns = _run(tmp_path / 'openai')
  want_grades, want_turns = _run(tmp_path / 'sampler')
  assert len(grades) == N and grades == want_grades
  assert turns == want_turns  # greedy: the same text, turn by turn
  # A trained policy: it searches and answers (not budget-cut noise).
  assert any(answer for _, answer in grades.values()), grades
  assert any('<tool_call>' in t for ts in turns.values() for t in ts)
  stats = httpx.get(url + '/metrics').json()
  assert stats['requests'] >= sum(len(t) for t in turns.values())
  for t in trajectory.iter_jsonl(tmp_path / 'openai' / results.TRAJECTORIES):
    assert t.meta['tokens_note'] == ''  # token-exact through the server
  manifest = json.loads((tmp_path / 'openai/manifest.json').read_text())
  assert manifest['policy_llm']['kind'] == 'openai'
