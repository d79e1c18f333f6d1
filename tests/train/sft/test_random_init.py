"""Recipe-size SFT refuses random initialisation unless asked for it."""

import pytest

from search_agent.train.sft import config as sft_config
from search_agent.train.sft import inputs as inputs_lib
from search_agent.train.sft import trainer
from tpu_configs import sft as sft_configs


def test_recipe_without_weights_is_refused_before_building_the_model(
    tmp_path,
):
  cfg = sft_config.from_config_dict(sft_configs.get_config('recipe'))
  assert not cfg.model.load_parameters_path and not cfg.init_from
  with pytest.raises(inputs_lib.InitError, match='--config.init=random'):
    trainer.train(cfg, str(tmp_path))
  assert not list(tmp_path.iterdir())  # nothing built or written


def test_random_init_is_the_tiny_default_and_validated():
  tiny = sft_config.from_config_dict(sft_configs.get_config('tiny'))
  assert tiny.init == 'random'
  recipe = sft_config.from_config_dict(sft_configs.get_config('recipe'))
  assert recipe.init == 'pretrained'
  trainer.check_init(tiny)  # no error
  c = sft_configs.get_config('recipe')
  c.init = 'random'
  trainer.check_init(sft_config.from_config_dict(c))
  c.init = 'zeros'
  with pytest.raises(ValueError, match="init 'zeros'"):
    sft_config.from_config_dict(c)
  c.init = 'pretrained'
  c.init_from = '/some/pretrain/workdir'
  trainer.check_init(sft_config.from_config_dict(c))
