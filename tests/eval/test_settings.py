"""tpu_configs/eval.py variants through the config edge."""

import dataclasses
import importlib.util

import pytest

from eval import harness
from eval import settings
from search_agent.agent import budgets


@pytest.fixture(scope='module')
def config_module(repo_root):
  spec = importlib.util.spec_from_file_location(
      'eval_config', repo_root / 'tpu_configs' / 'eval.py'
  )
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.mark.parametrize('arg', [None, 'mas', 'no_cm', 'xbench', 'tiny'])
def test_variants_build(config_module, arg):
  c = config_module.get_config(arg)
  config = settings.eval_config(c)
  assert isinstance(config, harness.EvalConfig)
  b = config.agent.budgets
  if arg == 'tiny':
    assert config.dataset.format == 'tasks' and b.max_steps == 4
    policy, manifest = settings.llm(c.policy)
    assert policy.name == 'scripted-demo' and manifest['script_len'] == 2
    assert settings.llm(c.judge) == (None, None)
  else:
    assert (b.max_steps, b.max_output_tokens, b.context_limit) == (
        500,
        32_768,
        262_144,
    )
  assert config.mode == ('mas' if arg == 'mas' else 'single')
  policy = 'none' if arg == 'no_cm' else 'discard_all'
  assert config.agent.context.policy == policy


def test_unknown_variant_and_search_choice(config_module):
  with pytest.raises(ValueError, match='unknown eval variant'):
    config_module.get_config('huge')
  with pytest.raises(settings.EvalSetupError, match='exactly one'):
    with settings.toolbox_factory(
        {
            'index_dir': '',
            'url': '',
            'tools': ('search',),
            'top_k': 3,
            'rerank': False,
        },
        None,
    ):
      pass


def test_token_counter_choice(config_module):
  c = config_module.get_config('tiny')
  assert isinstance(
      harness.counter(settings.eval_config(c)), budgets.CharTokenCounter
  )
  config = settings.eval_config(c)
  qwen = harness.counter(dataclasses.replace(config, tokenizer='qwen3'))
  assert qwen.count([{'role': 'user', 'content': 'Hello world'}]) == 2 + 8


def test_rerank_needs_an_auxiliary_llm(tiny_index):
  search = {'index_dir': str(tiny_index), 'url': '', 'tools': ('search',),
            'top_k': 3, 'rerank': True}  # fmt: skip
  with pytest.raises(settings.EvalSetupError, match='auxiliary LLM'):
    with settings.toolbox_factory(search, None):
      pass
