"""SamplerLLM over the real in-process sampler (tiny MaxText MoE, CPU).

Two trajectories run at once through the ReAct loop; their calls are
batched into one `Sampler.generate`, and each trajectory's token record
carries the sampler's tokens, logprobs and policy version.
"""

import asyncio
import dataclasses
import math

import jax
import pytest

from search_agent.agent import budgets
from search_agent.agent import react
from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import sampler_client
from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.model import sampler as sampler_lib
from search_agent.search import schemas

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


class NoTools:

  def schemas(self):
    return schemas.tool_schemas(('search',))

  async def execute(self, call):
    raise AssertionError(f'an untrained model made a valid call: {call}')


def test_loop_over_the_real_sampler(repo_root):
  cfg = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=128, logits_chunk=32
  )
  layout = families.layout_preset('fsdp')
  devices = jax.devices()[:1]
  model = maxtext_model.build(cfg, layout, devices=devices, record_routing=True)
  sampler = sampler_lib.Sampler(
      cfg, layout, batch_size=2, max_prompt_len=96, max_new_tokens=16,
      devices=devices,
  )  # fmt: skip
  sampler.set_params(model.params, policy_version=7)
  tok = tokenizer_lib.load_tokenizer(
      repo_root / 'tests/chat/golden/tiny_tokenizer'
  )
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  config = react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=2, max_output_tokens=16, context_limit=112,
          min_output_tokens=8,
      ),
      seed=1,
  )  # fmt: skip
  agent = react.ReActAgent(llm, config, counter=budgets.TokenizerCounter(tok))

  async def both():
    return await asyncio.gather(*(
        agent.run(
            traj_id=f't{i}', task_id=f't{i}', question=q, system_prompt='S',
            toolbox=NoTools(),
        )
        for i, q in enumerate(['Who was Lothair II?', 'Where is Tours?'])
    ))  # fmt: skip

  trajs = asyncio.run(both())
  assert llm.batches[0] == 2  # the two first calls shared one generate
  for t in trajs:
    # 16 random tokens without a stop: the per-call output budget ends it.
    assert t.status == 'max_tokens' and t.budgets_hit == ('max_output_tokens',)
    rec = t.tokens
    gen = [i for i, m in enumerate(rec.loss_mask) if m]
    assert len(gen) == 16 and t.meta['tokens_note'] == ''
    assert {rec.versions[i] for i in gen} == {7}
    assert all(
        math.isfinite(rec.logprobs[i]) and rec.logprobs[i] <= 0 for i in gen
    )
    prompt = chat_prompts.RendererPrompts(tok).prompt_ids(
        [{'role': 'system', 'content': 'S'},
         {'role': 'user', 'content': t.question}]
    )  # fmt: skip
    assert rec.token_ids[: len(prompt)] == prompt
