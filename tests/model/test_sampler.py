"""KV-cache sampler: cache correctness, batching, stops, logprobs, replay."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import families
from search_agent.model import logprobs
from search_agent.model import maxtext_model
from search_agent.model import sampler as sampler_lib

pytestmark = pytest.mark.maxtext

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [100, 200, 300]]


@pytest.fixture(scope='module')
def sampler(tiny_cfg, model1):
  s = sampler_lib.Sampler(
      tiny_cfg,
      families.layout_preset('fsdp'),
      batch_size=2,
      max_prompt_len=16,
      max_new_tokens=12,
      devices=jax.devices()[:1],
  )
  s.set_params(model1.params, policy_version=7)
  return s


def _train_forward(model, seq, routing=None, temperature=1.0):
  toks = jnp.asarray([seq[:-1]], jnp.int32)
  n = toks.shape[1]
  pos, seg = jnp.arange(n)[None], jnp.ones_like(toks)
  forced = None if routing is None else jnp.asarray(routing[None, :n])
  with model.rules():
    lp, out = logprobs.token_logprobs(
        model, model.params, toks, pos, seg, jnp.asarray([seq[1:]]), forced,
        temperature=temperature,
    )  # fmt: skip
  return np.asarray(lp[0]), out


def test_replayed_logprobs_equal_sampling_logprobs(sampler, model1):
  samples = sampler.generate(PROMPTS, temperature=1.0, seed=3)
  for prompt, s in zip(PROMPTS, samples):
    assert s.policy_version == 7 and s.finish_reason == 'length'
    assert len(s.token_ids) == len(s.logprobs) == 12
    seq = list(prompt) + list(s.token_ids)
    # Routing of every token that was fed to the model.
    assert s.routed_experts.shape == (len(seq) - 1, 2, 2)
    lp, out = _train_forward(model1, seq, s.routed_experts)
    np.testing.assert_allclose(
        lp[len(prompt) - 1 :], s.logprobs, rtol=1e-5, atol=1e-5
    )
    # With unchanged weights the training forward routes identically.
    np.testing.assert_array_equal(out.routing_bsle[0], s.routed_experts)


def test_cooler_sampling_is_scored_at_the_same_temperature(sampler, model1):
  # The sampler records log softmax(logits / T); the learner's forward at the
  # same T reproduces it, and the raw (T = 1) forward does not.
  samples = sampler.generate(PROMPTS, temperature=0.5, seed=4)
  for prompt, s in zip(PROMPTS, samples):
    seq = list(prompt) + list(s.token_ids)
    hot, _ = _train_forward(model1, seq, s.routed_experts, temperature=0.5)
    np.testing.assert_allclose(
        hot[len(prompt) - 1 :], s.logprobs, rtol=1e-5, atol=1e-5
    )
    raw, _ = _train_forward(model1, seq, s.routed_experts)
    assert np.max(np.abs(raw[len(prompt) - 1 :] - s.logprobs)) > 0.05


def test_greedy_matches_full_recompute_and_batching(sampler, model1):
  both = sampler.generate(PROMPTS, temperature=0.0)
  for prompt, s in zip(PROMPTS, both):
    seq = list(prompt) + list(s.token_ids)
    _, out = _train_forward(model1, seq)
    with model1.rules():
      logits = maxtext_model.logits_from_hidden(
          model1.graphdef, model1.params, model1.rest, out.hidden_btd
      )
    # Greedy decoding with the KV cache picks, at every step, the argmax of
    # a full recompute over the whole sequence.
    argmax = np.asarray(jnp.argmax(logits[0], axis=-1))
    assert tuple(argmax[len(prompt) - 1 :].tolist()) == s.token_ids
    alone = sampler.generate([prompt], temperature=0.0)[0]
    assert alone.token_ids == s.token_ids
    np.testing.assert_allclose(alone.logprobs, s.logprobs, rtol=1e-5)


def test_stop_tokens_and_strings(sampler):
  free = sampler.generate(PROMPTS[:1], temperature=0.0)[0].token_ids
  stop = free[2]
  first = free.index(stop)
  s = sampler.generate(PROMPTS[:1], temperature=0.0, stop_token_ids=[stop])[0]
  assert s.finish_reason == 'stop' and s.token_ids == free[: first + 1]
  decode = lambda ids: ''.join(f'<{i}>' for i in ids)
  s = sampler.generate(
      PROMPTS[:1],
      temperature=0.0,
      stop_strings=[f'<{stop}>'],
      decode_fn=decode,
  )[0]
  assert s.finish_reason == 'stop' and s.token_ids == free[: first + 1]
  s = sampler.generate(PROMPTS[:1], temperature=0.0, max_new_tokens=4)[0]
  assert s.token_ids == free[:4] and s.finish_reason == 'length'


def test_requests_that_do_not_fit(sampler):
  with pytest.raises(sampler_lib.SamplerError, match='max_prompt_len'):
    sampler.generate([list(range(17))])
  with pytest.raises(sampler_lib.SamplerError, match='1..2'):
    sampler.generate([[1], [2], [3]])
  with pytest.raises(sampler_lib.SamplerError, match='decode_fn'):
    sampler.generate([[1]], stop_strings=['x'])
