"""The `served` section: which roles it points where (no server started)."""

import dataclasses

import pytest

from search_agent.llm import registry
from search_agent.synthesis import config as config_lib
from search_agent.synthesis import served
from tpu_configs import synthesis as synthesis_config


def _job(variant='tiny,served', **llm):
  c = synthesis_config.get_config(variant)
  for key, value in llm.items():
    c.llm[key].update(value)
  return config_lib.job_from_config(c)


def test_tiny_served_variant_makes_every_role_an_llm_role():
  job = _job()
  assert set(job.roles.values()) == {'llm', 'agent', 'judge'}
  assert job.served.enabled and job.role_check
  assert job.extractor_fallback == 'pattern' and job.max_graphs == 2
  with pytest.raises(ValueError, match='modifiers'):
    synthesis_config.get_config('tiny,fast')
  assert not synthesis_config.get_config('tiny').served.enabled


def test_roles_without_an_endpoint_get_the_served_one():
  job = _job(critic=dict(kind='openai'))
  job.llm['critic']['openai'].update(base_url='http://critic:1/v1', model='c')
  pointed = served.with_endpoint(job, 'http://127.0.0.1:9/v1')
  for name, section in pointed.llm.items():
    config = registry.from_dict(section)
    assert config.kind == 'openai'
    if name == 'critic':
      assert config.openai.base_url == 'http://critic:1/v1'
      assert config.max_tokens == 0
    else:
      assert config.openai.base_url == 'http://127.0.0.1:9/v1'
      assert config.openai.model == 'tiny' and config.max_tokens == 48
      assert config.openai.max_retries == 2
  assert job.llm['generator']['kind'] == ''  # the job itself is unchanged


def test_endpoint_uses_a_given_base_url_and_checks_its_config(tmp_path):
  job = _job()
  given = config_lib.SynthesisJob(
      served=dataclasses.replace(job.served, base_url='http://h:8000/v1/')
  )
  with served.endpoint(given, tmp_path) as url:
    assert url == 'http://h:8000/v1'
  with pytest.raises(config_lib.SynthesisConfigError, match='served.config'):
    config_lib.ServedConfig(enabled=True)
  bad = config_lib.SynthesisJob(
      served=dataclasses.replace(job.served, overrides=('nokey',))
  )
  with pytest.raises(config_lib.SynthesisConfigError, match='KEY=VALUE'):
    with served.endpoint(bad, tmp_path):
      pass
