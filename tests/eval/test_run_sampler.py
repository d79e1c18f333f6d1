"""Pulse of `eval.run` with the in-process policy (tiny MaxText MoE, CPU)."""

import json
import subprocess
import sys

import httpx
import pytest

from search_agent.agent import trajectory
from search_agent.evaluation import results

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def test_eval_run_in_process_sampler(tmp_path, repo_root, tiny_index):
  tok = repo_root / 'tests/chat/golden/tiny_tokenizer'
  out = subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={tmp_path}',
       f'--config.search.index_dir={tiny_index}',
       '--config.policy.kind=sampler', '--config.policy.name=tiny-random',
       f'--config.sampler.tokenizer={tok}',
       '--config.sampler.max_prompt_len=1536',
       '--config.sampler.max_new_tokens=16', '--config.sampler.batch_size=4',
       '--config.sampler.devices=1', '--config.dataset.limit=2',
       '--config.agent.max_steps=2', '--config.agent.context_limit=1552',
       '--config.agent.max_output_tokens=16',
       '--config.agent.min_output_tokens=8'],
      cwd=repo_root, capture_output=True, text=True, timeout=600, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  # A random-init model writes 16 tokens without a stop: budget reached.
  assert summary['questions'] == 2 and summary['statuses'] == {'max_tokens': 2}
  manifest = json.loads((tmp_path / 'manifest.json').read_text())
  assert manifest['policy_llm']['kind'] == 'sampler'
  assert manifest['policy_llm']['name'] == 'tiny-random'
  assert manifest['policy_llm']['sampler']['preset'] == 'tiny'
  for t in trajectory.iter_jsonl(tmp_path / results.TRAJECTORIES):
    assert t.tokens is not None and sum(t.tokens.loss_mask) == 16
    assert t.meta['tokens_note'] == ''


def _eval(repo_root, tiny_index, workdir, kind):
  tok = repo_root / 'tests/chat/golden/tiny_tokenizer'
  return subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={workdir}',
       f'--config.search.index_dir={tiny_index}',
       f'--config.policy.kind={kind}', '--config.policy.name=tiny-random',
       f'--config.sampler.tokenizer={tok}',
       '--config.sampler.max_prompt_len=1536',
       '--config.sampler.max_new_tokens=16', '--config.sampler.batch_size=4',
       '--config.sampler.devices=1', '--config.dataset.limit=3',
       '--config.agent.max_steps=2', '--config.agent.context_limit=1552',
       '--config.agent.max_output_tokens=16',
       '--config.agent.min_output_tokens=8', '--config.agent.temperature=0.0',
       '--config.concurrency=4'],
      cwd=repo_root, capture_output=True, text=True, timeout=900, check=False,
  )  # fmt: skip


def test_served_policy_gives_the_in_process_samplers_trajectories(
    tmp_path, repo_root, tiny_index
):
  """policy.kind=served: the sampler section's model behind a rollout server
  the run starts and stops; greedy, the same assistant turns as in-process."""
  runs = {}
  for kind in ('sampler', 'served'):
    out = _eval(repo_root, tiny_index, tmp_path / kind, kind)
    assert out.returncode == 0, out.stderr[-3000:]
    runs[kind] = {
        t.id: [
            (m.reasoning, m.content)
            for m in t.messages
            if m.role == 'assistant'
        ]
        for t in trajectory.iter_jsonl(tmp_path / kind / results.TRAJECTORIES)
    }
  assert len(runs['served']) == 3 and all(runs['served'].values())
  assert runs['served'] == runs['sampler']
  manifest = json.loads((tmp_path / 'served' / 'manifest.json').read_text())
  policy = manifest['policy_llm']
  assert policy['kind'] == 'openai' and policy['name'] == 'tiny-random'
  served = policy['served']
  assert served['model.preset'] == 'tiny' and served['engine.slots'] == '4'
  assert served['engine.max_context'] == '1552'
  assert (tmp_path / 'served' / 'server.log').stat().st_size > 0
  with pytest.raises(httpx.TransportError):  # stopped with the eval
    httpx.get(served['url'] + '/health', timeout=2.0)
