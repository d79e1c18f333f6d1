"""Parallel layouts: `--config=tpu_configs/model/layouts.py:<name>`.

'fsdp' (all devices on fsdp), 'cpu8_ep_tp_cp' (8 simulated CPU devices,
expert=2 x tensor=2 x context=2), 'recipe_tp2_cp8_ep8' (open-recipe.md SFT:
TP=2, CP=8, EP=8 on 128 chips). Fields: search_agent.model.mesh.Parallelism.
"""

import ml_collections

from search_agent.model import families


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  return ml_collections.ConfigDict(
      families.as_dict(families.layout_preset(arg or 'fsdp'))
  )
