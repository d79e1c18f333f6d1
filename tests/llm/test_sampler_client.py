"""SamplerLLM with the real Qwen3 tokenizer and the real renderer.

The sampler itself is a stand-in that emits the tokens of scripted replies
(the real one is search_agent/model/sampler.py); the test is about the
adapter and the loop's token-exact record, which must equal the renderer's
rendering of the trajectory, token for token and mask for mask.
"""

import asyncio
import dataclasses
import json
import time

import pytest

from search_agent.agent import react
from search_agent.chat import chat_prompts
from search_agent.chat import renderer
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol
from search_agent.llm import sampler_client
from search_agent.search import schemas


@dataclasses.dataclass
class Sample:
  token_ids: list[int]
  logprobs: list[float]
  finish_reason: str = 'stop'
  policy_version: int = 3


class ScriptSampler:
  """Emits encode(reply) + <|im_end|> for each scripted reply.

  Same call signature as search_agent.model.sampler.Sampler.generate.
  """

  def __init__(self, tok, replies, batch_size=4, max_prompt_len=4096):
    self.tok = tok
    self.replies = list(replies)
    self.prompts = []
    self.calls = []
    self.batch_size = batch_size
    self.max_prompt_len = max_prompt_len

  def generate(
      self,
      prompts,
      *,
      temperature,
      top_p,
      max_new_tokens,
      stop_token_ids,
      stop_strings,
      decode_fn,
      seed,
  ):
    assert len(prompts) <= self.batch_size
    self.calls.append(dict(n=len(prompts), max_new_tokens=max_new_tokens,
                           temperature=temperature, seed=seed))  # fmt: skip
    out = []
    for p in prompts:
      self.prompts.append(p)
      ids = self.tok.encode(self.replies.pop(0)) + [stop_token_ids[0]]
      finish = 'stop'
      if len(ids) > max_new_tokens:
        ids, finish = ids[:max_new_tokens], 'length'
      out.append(
          Sample(
              token_ids=ids, logprobs=[-0.25] * len(ids), finish_reason=finish
          )
      )
    return out


@dataclasses.dataclass
class Result:
  text: str
  error: str | None = None


class Toolbox:

  def schemas(self):
    return schemas.tool_schemas(('search',))

  async def execute(self, call):
    return Result(text='1. [r1] Paris - capital of France')


@pytest.fixture(scope='module')
def tok():
  return tokenizer_lib.load_tokenizer(tokenizer_lib.maxtext_tokenizer_dir())


CALL = (
    '<tool_call>'
    + json.dumps(
        {'name': 'search', 'arguments': {'query': ['capital of France']}}
    )
    + '</tool_call>'
)
REPLIES = [
    f'<think>\nI should search.\n</think>\n{CALL}',
    '<think>\nFound it.\n</think>\nConfidence: 90%\n<answer>Paris</answer>',
]


def test_loop_over_sampler_is_token_exact(tok):
  sampler = ScriptSampler(tok, REPLIES)
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  agent = react.ReActAgent(llm, react.AgentConfig())
  traj = asyncio.run(
      agent.run(
          traj_id='t#0',
          task_id='t',
          question='Capital of France?',
          system_prompt='You search.',
          toolbox=Toolbox(),
      )
  )
  assert traj.status == 'answered' and traj.final_answer == 'Paris'
  assert traj.meta['tokens_note'] == ''
  rec = traj.tokens
  full = renderer.render(traj.messages, tok)
  n = len(rec.token_ids)
  # The record ends at the last generated token (<|im_end|>).
  assert rec.token_ids == full.token_ids[:n]
  assert rec.loss_mask == full.loss_mask[:n]
  assert full.token_ids[n:] == tuple(tok.encode('\n'))
  assert sum(rec.loss_mask) == sum(full.loss_mask)
  assert {v for v, m in zip(rec.versions, rec.loss_mask) if m} == {3}
  assert {x for x, m in zip(rec.logprobs, rec.loss_mask) if m} == {-0.25}
  # The second prompt is exactly the render of the first three turns.
  assert (
      tuple(sampler.prompts[1])
      == renderer.render(
          traj.messages[:4], tok, add_generation_prompt=True
      ).token_ids
  )


def test_completion_fields_and_failures(tok):
  prompts = chat_prompts.RendererPrompts(tok)
  llm = sampler_client.SamplerLLM(ScriptSampler(tok, ['hi there']), prompts)
  msgs = [{'role': 'user', 'content': 'hello'}]
  [c] = asyncio.run(llm.chat(msgs, protocol.SamplingParams()))
  assert c.text == 'hi there'
  assert c.token_ids[-1] == tok.token_id('<|im_end|>')
  assert c.prompt_token_ids == prompts.prompt_ids(msgs)
  assert c.prompt_tokens == len(c.prompt_token_ids) and c.policy_version == 3

  class Broken:

    batch_size, max_prompt_len = 2, 4096

    def generate(self, prompts, **kw):
      raise MemoryError('KV cache full')

  with pytest.raises(protocol.LLMError, match='KV cache full'):
    asyncio.run(
        sampler_client.SamplerLLM(Broken(), prompts).chat(
            msgs, protocol.SamplingParams()
        )
    )
  with pytest.raises(protocol.LLMError, match='cannot render'):
    asyncio.run(
        llm.chat(
            [{'role': 'nobody', 'content': 'x'}], protocol.SamplingParams()
        )
    )


def test_concurrent_chats_are_batched_and_cut_at_their_own_limit(tok):
  sampler = ScriptSampler(
      tok, ['one two three four five six'] * 6, batch_size=4
  )
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  msgs = [{'role': 'user', 'content': 'go'}]

  async def go():
    calls = [
        llm.chat(msgs, protocol.SamplingParams(max_tokens=m, seed=5))
        for m in (3, 100, 100, 100, 100)
    ]
    calls.append(llm.chat(msgs, protocol.SamplingParams(temperature=0.0)))
    return await asyncio.gather(*calls)

  out = asyncio.run(go())
  # 5 requests at temperature 1 -> batches of 4 and 1; temperature 0 apart.
  assert llm.batches == [4, 1, 1]
  assert sampler.calls[0]['max_new_tokens'] == 100
  assert sampler.calls[0]['seed'] == 5
  short = out[0][0]
  assert short.finish_reason == 'length' and len(short.token_ids) == 3
  assert short.text == tok.decode(short.token_ids)
  full = out[1][0]
  assert full.finish_reason == 'stop'
  assert full.text == 'one two three four five six'
  assert full.token_ids[:3] == short.token_ids


def test_prompt_longer_than_the_sampler_is_a_context_length_error(tok):
  sampler = ScriptSampler(tok, [], max_prompt_len=5)
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  msgs = [{'role': 'user', 'content': 'a much longer prompt than five tokens'}]
  with pytest.raises(protocol.ContextLengthError, match='max_prompt_len 5'):
    asyncio.run(llm.chat(msgs, protocol.SamplingParams()))


def test_a_cancelled_chat_does_not_stall_its_batch(tok):
  """An aborted caller's reply is dropped; the rest of the batch is served."""

  class Slow(ScriptSampler):

    def generate(self, prompts, **kw):
      time.sleep(0.2)
      return super().generate(prompts, **kw)

  sampler = Slow(tok, ['first', 'second', 'third'])
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  msgs = [{'role': 'user', 'content': 'go'}]

  async def go():
    params = protocol.SamplingParams()
    aborted = asyncio.create_task(llm.chat(msgs, params))
    kept = asyncio.create_task(llm.chat(msgs, params))
    await asyncio.sleep(0.05)  # both are in the batch being generated
    aborted.cancel()
    [c] = await asyncio.wait_for(kept, timeout=5)
    [after] = await asyncio.wait_for(llm.chat(msgs, params), timeout=5)
    return c.text, after.text

  assert asyncio.run(go()) == ('second', 'third')
  assert llm.batches == [2, 1]


class CharSampler(ScriptSampler):
  """Emits each reply one character per token: a valid tokenization of the
  text that re-encoding the text would not give (as a sampled policy's
  replies often are)."""

  def generate(self, prompts, *, stop_token_ids, **kw):
    out = super().generate(prompts, stop_token_ids=stop_token_ids, **kw)
    for s in out:
      text = self.tok.decode(s.token_ids[:-1])
      s.token_ids[:] = [i for ch in text for i in self.tok.encode(ch)] + [
          stop_token_ids[0]
      ]
      s.logprobs[:] = [-0.25] * len(s.token_ids)
    return out


def test_non_canonical_replies_stay_one_token_prefix_chain(tok):
  sampler = CharSampler(tok, REPLIES)
  assert len(tok.encode(REPLIES[0])) < len(REPLIES[0])  # merges exist
  llm = sampler_client.SamplerLLM(sampler, chat_prompts.RendererPrompts(tok))
  agent = react.ReActAgent(llm, react.AgentConfig())
  traj = asyncio.run(
      agent.run(
          traj_id='t#0',
          task_id='t',
          question='Capital of France?',
          system_prompt='You search.',
          toolbox=Toolbox(),
      )
  )
  assert traj.status == 'answered' and traj.final_answer == 'Paris'
  # Re-rendering the first reply's text would break the chain; the second
  # prompt continues from the sampled ids instead.
  assert traj.meta['tokens_note'] == ''
  first, second = sampler.prompts
  end = tok.token_id('<|im_end|>')
  gen = [i for ch in REPLIES[0] for i in tok.encode(ch)] + [end]
  assert tuple(second[: len(first) + len(gen)]) == tuple(first) + tuple(gen)
  canonical = renderer.render(
      traj.messages[:4], tok, add_generation_prompt=True
  )
  assert tuple(second) != canonical.token_ids
  assert tok.decode(second) == tok.decode(canonical.token_ids)
  n_generated = (
      len(gen) + len([i for ch in REPLIES[1] for i in tok.encode(ch)]) + 1
  )
  assert sum(traj.tokens.loss_mask) == n_generated


def test_sampled_ids_cut_before_the_turn_end_are_rendered_as_text(tok):
  prompts = chat_prompts.RendererPrompts(tok)
  msgs = [
      {'role': 'user', 'content': 'hello'},
      {
          'role': 'assistant',
          'content': 'hi',
          protocol.SAMPLED_TOKEN_IDS: (1, 2),
      },
      {'role': 'user', 'content': 'again'},
  ]
  plain = [{k: v for k, v in m.items() if k != protocol.SAMPLED_TOKEN_IDS}
           for m in msgs]  # fmt: skip
  assert prompts.prompt_ids(msgs) == prompts.prompt_ids(plain)
