"""tpu_configs/eval.py variants through the config edge."""

import dataclasses
import importlib.util

import pytest

from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.evaluation import config as config_lib
from search_agent.evaluation import harness
from search_agent.llm.prompts import prompt as prompt_lib


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
  config = config_lib.eval_config(c)
  assert isinstance(config, harness.EvalConfig)
  b = config.agent.budgets
  if arg == 'tiny':
    assert config.dataset.format == 'tasks' and b.max_steps == 4
    policy, manifest = config_lib.llm(c.policy)
    assert policy.name == 'scripted-demo' and manifest['script_len'] == 2
    assert config_lib.llm(c.judge) == (None, None)
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
  with pytest.raises(config_lib.EvalSetupError, match='exactly one'):
    with config_lib.toolbox_factory(
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
      harness.counter(config_lib.eval_config(c)), budgets.CharTokenCounter
  )
  config = config_lib.eval_config(c)
  qwen = harness.counter(dataclasses.replace(config, tokenizer='qwen3'))
  assert qwen.count([{'role': 'user', 'content': 'Hello world'}]) == 2 + 8


def test_rerank_needs_an_auxiliary_llm(tiny_index):
  search = {'index_dir': str(tiny_index), 'url': '', 'tools': ('search',),
            'top_k': 3, 'rerank': True}  # fmt: skip
  with pytest.raises(config_lib.EvalSetupError, match='auxiliary LLM'):
    with config_lib.toolbox_factory(search, None):
      pass


def test_manifest_hashes_every_prompt_in_use(config_module, tiny_index):
  """Summary CM and the auxiliary LLM's visit/rerank prompts are hashed too."""
  c = config_module.get_config('tiny')
  config = config_lib.eval_config(c)
  config = dataclasses.replace(
      config,
      agent=dataclasses.replace(
          config.agent,
          context=managed_context.ContextConfig(policy='summary'),
      ),
  )
  policy, _ = config_lib.llm(c.policy)
  _, prompts = harness._runner(  # pylint: disable=protected-access
      config, policy, None, []
  )
  assert prompts == {
      'agent_system.md': prompt_lib.load('agent_system.md').sha256,
      'context_summary.md': prompt_lib.load('context_summary.md').sha256,
  }
  search = {'index_dir': str(tiny_index), 'url': '', 'top_k': 3,
            'tools': ('search', 'visit'), 'rerank': True}  # fmt: skip
  with config_lib.toolbox_factory(search, policy) as factory:
    assert factory.manifest['prompt_sha256'] == {
        'visit_summary.txt': prompt_lib.load('visit_summary.txt').sha256,
        'rerank.txt': prompt_lib.load('rerank.txt').sha256,
    }
  search.update(rerank=False)
  with config_lib.toolbox_factory(search, None) as factory:
    assert factory.manifest['prompt_sha256'] == {}  # extractive visit


def test_sampler_policy_needs_agent_limits_within_the_sampler(config_module):
  """Limits the sampler would cut first are refused, not misreported."""
  c = config_module.get_config('tiny')
  c.policy.kind = 'sampler'
  with pytest.raises(config_lib.EvalSetupError, match='agent.context_limit'):
    config_lib.eval_config(c)  # context 32,768 > 4,096 + 1,024
  c.agent.context_limit = 5_120
  c.agent.max_output_tokens = 2_048
  with pytest.raises(config_lib.EvalSetupError, match='max_new_tokens \\(1024'):
    config_lib.eval_config(c)
  c.agent.max_output_tokens = 1_024
  assert config_lib.eval_config(c).agent.budgets.context_limit == 5_120


def test_served_server_takes_the_sampler_sections_model_and_limits(
    config_module,
):
  # pylint: disable-next=g-import-not-at-top
  from search_agent.evaluation import served

  c = config_module.get_config('tiny')
  c.policy.kind = 'served'
  c.sampler.update(
      dims=('base_num_decoder_layers=4',), checkpoint_dir='/run/sft',
      tokenizer='/run/tokenizer', max_prompt_len=1000, max_new_tokens=64,
  )  # fmt: skip
  c.concurrency = 6
  o = served.server_overrides(c)
  assert o['model.checkpoint_dir'] == '/run/sft'
  assert eval(o['model.dims']) == ('base_num_decoder_layers=4',)  # pylint: disable=eval-used
  assert o['tokenizer'] == '/run/tokenizer' and o['template'] == 'chatml'
  assert o['engine.slots'] == '6' and o['engine.max_context'] == '1064'
  assert o['engine.max_new_tokens'] == '64' and o['host'] == '127.0.0.1'
  c.mode = 'mas'  # a searcher per slot, and the verifier
  assert served.server_overrides(c)['engine.slots'] == str(6 * 3)
  c.served.overrides = ('engine.slots=9',)
  assert served.server_overrides(c)['engine.slots'] == '9'
  c.served.overrides = ('engine.slots',)
  with pytest.raises(config_lib.EvalSetupError, match='not key=value'):
    served.server_overrides(c)
  # The agent's limits must fit the served model's, as the sampler's.
  c.agent.context_limit = 5000
  with pytest.raises(config_lib.EvalSetupError, match='sampler/served'):
    config_lib.eval_config(c)
