"""Registry: configs to LLMs, errors that say what to fix."""

import asyncio

import ml_collections
import pytest

from search_agent.llm import openai_client
from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm import scripted


def test_openai_from_config_dict_records_no_key():
  cfg = ml_collections.ConfigDict(
      {
          'kind': 'openai',
          'name': 'policy',
          'openai': {
              'base_url': 'http://127.0.0.1:9/v1',
              'model': 'qwen',
              'api_key_env': 'MY_KEY',
              'max_concurrency': 4,
          },
          'script': (),
      }
  )
  config = registry.from_dict(cfg.to_dict())
  llm = registry.build(config)
  assert isinstance(llm, openai_client.OpenAIClient)
  assert llm.name == 'policy' and llm.config.max_concurrency == 4
  manifest = config.manifest()
  assert manifest['openai']['api_key_env'] == 'MY_KEY'
  assert 'sk-' not in str(manifest)


def test_scripted_replies_by_assistant_turn():
  llm = registry.build(
      registry.from_dict({'kind': 'scripted', 'script': ['first', 'then']})
  )
  assert isinstance(llm, scripted.ScriptedLLM)
  params = protocol.SamplingParams()
  convo = [{'role': 'user', 'content': 'q'}]
  assert asyncio.run(llm.chat(convo, params))[0].text == 'first'
  convo += [{'role': 'assistant', 'content': 'first'}]
  assert asyncio.run(llm.chat(convo, params))[0].text == 'then'
  convo += [{'role': 'assistant', 'content': 'then'}] * 3
  assert asyncio.run(llm.chat(convo, params))[0].text == 'then'


@pytest.mark.parametrize(
    'd, match',
    [
        ({'kind': 'gpt'}, 'not one of'),
        ({'kind': 'openai'}, 'needs openai.base_url'),
        ({'kind': 'scripted'}, 'non-empty script'),
        ({'kind': 'openai', 'openai': {'model': 'm'}}, 'bad openai section'),
        ({'kind': 'openai', 'temp': 1}, 'unknown LLM config fields'),
    ],
)
def test_bad_configs(d, match):
  with pytest.raises(registry.LLMConfigError, match=match):
    registry.from_dict(d)


def test_sampler_kind_needs_the_sampler():
  config = registry.from_dict({'kind': 'sampler'})
  with pytest.raises(registry.LLMConfigError, match='sampler_llm'):
    registry.build(config)
  fake = scripted.ScriptedLLM(['x'], name='sampler')
  assert registry.build(config, sampler_llm=fake) is fake
