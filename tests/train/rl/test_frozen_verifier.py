"""The in-process frozen Verifier: the initial weights, never updated."""

import asyncio
import dataclasses
import pathlib
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.llm import protocol
from search_agent.selfplay import verifier as verifier_lib
from search_agent.train.rl import frozen_verifier
from search_agent.train.rl import weight_sync


def _params(x):
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ('d',))
  sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  return {'w': jax.device_put(jnp.full((2,), x, jnp.float32), sh)}


@dataclasses.dataclass(frozen=True)
class _Sample:
  token_ids: tuple[int, ...]
  logprobs: tuple[float, ...]
  finish_reason: str = 'stop'
  policy_version: int = 0
  routed_experts: None = None


class _Sampler:
  """Answers with its weights' value: 1.0 -> 'yes', anything else 'no'."""

  batch_size, max_prompt_len = 4, 64

  def __init__(self):
    self.params, self.policy_version = None, -1

  def abstract_params(self):
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        _params(0.0),
    )

  def set_params(self, params, policy_version):
    self.params, self.policy_version = params, policy_version

  def generate(self, prompts, **kwargs):
    del kwargs
    tok = 1 if float(self.params['w'][0]) == 1.0 else 2
    return [
        _Sample((tok, 0), (0.0, 0.0), policy_version=self.policy_version)
        for _ in prompts
    ]


class _Prompts:
  stop_token_ids = (0,)

  def prompt_ids(self, messages):
    return (5,) * len(messages)

  def decode(self, ids):
    words = {1: '{"correct": true}', 2: '{"correct": false}'}
    return ''.join(words.get(i, '') for i in ids)


def test_the_verifier_keeps_the_initial_weights(tmp_path):
  store = weight_sync.WeightStore(tmp_path / 'weights', keep=1)
  store.publish(_params(1.0), 0)  # the learner's initial weights
  built = []

  def make():
    built.append(_Sampler())
    return built[-1]

  llm = frozen_verifier.FrozenInitialLLM(
      make, _Prompts(), store, tmp_path / 'selfplay' / 'verifier'
  )
  verifier = verifier_lib.LLMVerifier(llm, max_tokens=8)
  assert asyncio.run(verifier.correct('q?', 'Paris', 'London'))
  assert llm.policy_version == 0
  # The learner moves on (version 0 pruned, later ones pushed): the
  # Verifier still answers with the initial weights, loaded once.
  store.publish(_params(7.0), 1)
  store.publish(_params(8.0), 2)
  assert store.versions() == [2]
  assert asyncio.run(verifier.correct('q?', 'Paris', 'London'))
  assert len(built) == 1 and llm.policy_version == 0
  # A restarted worker builds it again from its frozen copy.
  again = frozen_verifier.FrozenInitialLLM(
      make, _Prompts(), store, tmp_path / 'selfplay' / 'verifier'
  )
  out = asyncio.run(
      again.chat([{'role': 'user', 'content': 'x'}], protocol.SamplingParams())
  )
  assert out[0].text == '{"correct": true}'


def test_no_initial_weights_is_a_clear_error(tmp_path):
  store = weight_sync.WeightStore(tmp_path / 'weights')
  with pytest.raises(frozen_verifier.FrozenVerifierError, match='learner'):
    frozen_verifier.frozen_copy(
        store, tmp_path / 'frozen', timeout_s=1.0, sleep=lambda s: None
    )
  store.publish(_params(1.0), 0)
  frozen = frozen_verifier.frozen_copy(store, tmp_path / 'frozen', 1.0)
  shutil.rmtree(store.root / '0')
  np.testing.assert_array_equal(
      frozen.load(0, _params(0.0))['w'], np.ones(2, np.float32)
  )


@pytest.mark.maxtext
@pytest.mark.slow
def test_the_real_tiny_sampler_answers_as_the_initial_model(tmp_path):
  # pylint: disable=g-import-not-at-top
  from search_agent.chat import tokenizer as tokenizer_lib
  from search_agent.model import families
  from search_agent.model import maxtext_model
  from search_agent.train.rl import job as job_lib
  from search_agent.train.rl import selfplay
  from tpu_configs import rl as rl_config

  # pylint: enable=g-import-not-at-top
  c = rl_config.get_config('searchmaster,tiny')
  c.selfplay.verifier.update(dict(kind='frozen', max_tokens=8))
  c.sampler.update(dict(batch_size=1, max_prompt_len=64))
  devices = jax.devices()[:1]
  model = maxtext_model.build(
      job_lib.model_config(c), families.layout_preset('fsdp'), devices=devices
  )
  store = weight_sync.WeightStore(tmp_path / 'weights', keep=1)
  store.publish(model.params, 0)
  tok = tokenizer_lib.load_tokenizer(
      pathlib.Path(__file__).parents[2] / 'chat' / 'golden' / 'tiny_tokenizer'
  )
  llm = selfplay.frozen_verifier_llm(c, str(tmp_path), devices, tok)
  chat = [{'role': 'user', 'content': 'Is Paris in France?'}]
  greedy = protocol.SamplingParams(temperature=0.0, max_tokens=8)
  (before,) = asyncio.run(llm.chat(chat, greedy))
  # The learner publishes other weights and prunes version 0.
  store.publish(jax.tree.map(jnp.zeros_like, model.params), 1)
  assert store.versions() == [1]
  (after,) = asyncio.run(llm.chat(chat, greedy))
  assert after.token_ids == before.token_ids
  assert before.policy_version == after.policy_version == 0
