"""SFT's training views of a long trajectory are RL's segments of it.

A 20-call rollout runs through the real harness (ReActAgent, sliding window
keeping one observation, the renderer's prompts, SamplerLLM) on a sampler
that samples the canonical tokens of scripted turns. The SFT render of the
same trajectory under the same context policy (train/data.make_render_fn)
must give the same sequences, token for token, with the same loss masks:
a demonstration trains exactly the views RL trains.
"""

import asyncio
import dataclasses
import json
import pathlib

import pytest

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import react
from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import sampler_client
from search_agent.search import schemas
from search_agent.train import data as data_lib

TOKENIZER = (
    pathlib.Path(__file__).resolve().parents[1]
    / 'chat'
    / 'golden'
    / 'tiny_tokenizer'
)


@dataclasses.dataclass(frozen=True)
class _Sample:
  token_ids: tuple[int, ...]
  logprobs: tuple[float, ...]
  finish_reason: str = 'stop'
  policy_version: int = 3
  routed_experts: None = None


class ScriptedSampler:
  """Samples the canonical tokens of each scripted turn, in order."""

  batch_size = 1
  max_prompt_len = 100_000

  def __init__(self, tok, end_id, texts):
    self.replies = [tuple(tok.encode(t)) + (end_id,) for t in texts]

  def generate(self, prompts, **kwargs):
    del kwargs
    return [
        _Sample(ids, tuple(-0.1 for _ in ids))
        for ids in (self.replies.pop(0) for _ in prompts)
    ]


@dataclasses.dataclass
class _Result:
  text: str
  error: str | None = None


class EchoToolbox:

  def schemas(self):
    return schemas.tool_schemas(('search',))

  async def execute(self, call):
    return _Result(text=f'results for {call.arguments["query"]}: ' + 'x' * 40)


def _call(query: str) -> str:
  body = json.dumps({'name': 'search', 'arguments': {'query': [query]}})
  return f'<tool_call>\n{body}\n</tool_call>'


@pytest.mark.parametrize('keep', [1, 5])
def test_sft_views_are_the_rl_segments(keep):
  tok = tokenizer_lib.load_tokenizer(TOKENIZER)
  prompts = chat_prompts.RendererPrompts(tok, 'chatml')
  texts = [_call(f'query {i}') for i in range(20)]
  texts[7] = '<tool_call>\n{"name": broken\n</tool_call>'  # invalid: no loss
  texts.append('<answer>Paris</answer>')
  sampler = ScriptedSampler(tok, tok.token_id('<|im_end|>'), texts)
  agent = react.ReActAgent(
      sampler_client.SamplerLLM(sampler, prompts),
      react.AgentConfig(
          budgets=budgets.Budgets(
              max_steps=30, max_output_tokens=256, context_limit=100_000
          ),
          context=managed_context.ContextConfig(
              policy='sliding_window', keep_observations=keep
          ),
      ),
  )
  traj = asyncio.run(
      agent.run(
          traj_id='t#0',
          task_id='t',
          question='Capital of France?',
          system_prompt='SYSTEM',
          toolbox=EchoToolbox(),
      )
  )
  assert traj.status == 'answered', traj.error
  assert len(traj.segments) == traj.meta['context_slides'] + 1 > 1
  assert any(m.invalid for m in traj.messages)
  render = data_lib.make_render_fn(tok, 'sliding_window', keep, 'chatml')
  views = render(traj)
  assert len(views) == len(traj.segments)
  for (ids, mask), seg in zip(views, traj.segments):
    assert tuple(ids) == seg.token_ids
    assert tuple(mask) == seg.loss_mask
