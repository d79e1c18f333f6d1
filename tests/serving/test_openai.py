"""The OpenAI-compatible endpoints with real clients: the official `openai`
package, the project's OpenAIClient, and `eval.run` pointed at the server."""

import asyncio
import json
import pathlib
import subprocess
import sys

import openai
import pytest

from search_agent.agent import trajectory
from search_agent.llm import openai_client
from search_agent.llm import protocol

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]
MESSAGES = [
    {'role': 'system', 'content': 'You answer.'},
    {'role': 'user', 'content': 'Who was Lothair II?'},
]


def test_official_openai_package(server):
  url, served = server
  client = openai.OpenAI(base_url=url + '/v1', api_key='none', max_retries=0)
  assert [m.id for m in client.models.list()] == ['tiny']
  r = client.chat.completions.create(
      model='tiny', messages=MESSAGES, max_tokens=6, temperature=0.0,
      logprobs=True, n=2, seed=3,
  )  # fmt: skip
  assert len(r.choices) == 2 and r.usage.completion_tokens == 12
  for c in r.choices:
    ids = c.model_extra['token_ids']
    assert len(ids) == 6 and len(c.logprobs.content) == 6
    assert c.finish_reason == 'length'
    assert c.message.content == served.prompts.decode(ids)
  assert r.model_extra['prompt_token_ids'] == list(
      served.prompts.prompt_ids(MESSAGES)
  )
  # Greedy: the two samples agree (seeds differ, argmax does not).
  assert (
      r.choices[0].model_extra['token_ids']
      == r.choices[1].model_extra['token_ids']
  )
  c = client.completions.create(
      model='tiny', prompt='Lothair II was', max_tokens=5, temperature=0.0,
      logprobs=1,
  )  # fmt: skip
  assert len(c.choices[0].logprobs.token_logprobs) == 5
  assert c.choices[0].text == served.prompts.decode(
      c.choices[0].model_extra['token_ids']
  )
  with pytest.raises(openai.BadRequestError, match='too long'):
    client.completions.create(model='tiny', prompt=[1] * 5000, max_tokens=2)
  with pytest.raises(openai.BadRequestError, match='stream'):
    client.chat.completions.create(
        model='tiny', messages=MESSAGES, max_tokens=2, stream=True
    )


def test_project_openai_client_is_token_exact(server):
  url, served = server
  client = openai_client.OpenAIClient(
      openai_client.OpenAIConfig(
          base_url=url + '/v1', model='tiny', logprobs=True,
          return_token_ids=True, max_retries=0,
      )
  )  # fmt: skip
  params = protocol.SamplingParams(temperature=1.0, max_tokens=6, seed=1)

  async def go():
    out = await client.chat(MESSAGES, params)
    await client.aclose()
    return out

  (c,) = asyncio.run(go())
  assert len(c.token_ids) == len(c.logprobs) == 6
  assert c.prompt_token_ids == served.prompts.prompt_ids(MESSAGES)


def test_eval_run_through_the_server(server, tiny_index, tmp_path):
  url, _ = server
  tok = REPO / 'tests/chat/golden/tiny_tokenizer'
  out = subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={tmp_path}',
       f'--config.search.index_dir={tiny_index}',
       '--config.policy.kind=openai', '--config.policy.name=tiny-server',
       f'--config.policy.openai.base_url={url}/v1',
       '--config.policy.openai.model=tiny',
       '--config.policy.openai.logprobs=True',
       '--config.policy.openai.return_token_ids=True',
       f'--config.tokenizer={tok}', '--config.dataset.limit=2',
       '--config.agent.max_steps=2', '--config.agent.context_limit=1790',
       '--config.agent.max_output_tokens=16',
       '--config.agent.min_output_tokens=8'],
      cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['questions'] == 2
  trajs = list(trajectory.iter_jsonl(tmp_path / 'trajectories.jsonl'))
  assert len(trajs) == 2
  for t in trajs:  # token-exact through the OpenAI endpoint
    assert t.tokens is not None and sum(t.tokens.loss_mask) == 16
    # llm/openai_client.py reads the server's policy_versions extension.
    assert t.meta['tokens_note'] == ''
    gen = [v for v, m in zip(t.tokens.versions, t.tokens.loss_mask) if m]
    assert gen and min(gen) >= 0
