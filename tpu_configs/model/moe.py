"""MoE model configs: `--config=tpu_configs/model/moe.py:<preset>`.

Presets: 'tiny' (Mixtral-block MoE for a 2-core CPU, router replay),
'qwen3-30b-a3b' (the open recipe's model class), 'qwen3.5-35b-a3b' (same
class, router replay). Every field of search_agent.model.config.ModelConfig
is here and can be overridden on the command line, e.g.
`--config.model.max_target_length=131072`.
"""

import ml_collections

from search_agent.model import families


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  preset = arg or 'tiny'
  config = ml_collections.ConfigDict()
  # ModelConfig fields (see search_agent/model/config.py for each).
  config.model = families.as_dict(families.model_preset(preset))
  # Parallelism: 'fsdp' on CPU; the recipe's TP=2, CP=8, EP=8 otherwise.
  layout = 'fsdp' if preset == 'tiny' else 'recipe_tp2_cp8_ep8'
  config.layout = families.as_dict(families.layout_preset(layout))
  return config
