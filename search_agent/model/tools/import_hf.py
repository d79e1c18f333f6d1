"""Converts an HF safetensors checkpoint to MaxText/orbax parameters, offline.

  python -m search_agent.model.tools.import_hf --hf_dir=DIR --out_dir=OUT \
      --preset=qwen3-30b-a3b

Prints the path of the parameter checkpoint (set it as the model config's
`load_parameters_path`, or load it with `hf_import.load_params`).
"""

import json

from absl import app
from absl import flags
import jax

from search_agent.model import families
from search_agent.model import hf_import
from search_agent.model import quiet_logs

_HF = flags.DEFINE_string('hf_dir', None, 'HF checkpoint directory.')
_OUT = flags.DEFINE_string('out_dir', None, 'Output directory.')
_PRESET = flags.DEFINE_string('preset', 'qwen3-30b-a3b', 'Model preset.')
_MODEL_JSON = flags.DEFINE_string(
    'model_json', '', 'A ModelConfig as JSON (instead of --preset).'
)


def main(argv):
  del argv
  quiet_logs.install(('orbax', 'maxtext'))
  if _MODEL_JSON.value:
    base = families.model_from_dict(json.loads(_MODEL_JSON.value))
  else:
    base = families.model_preset(_PRESET.value)
  cfg = hf_import.model_config_for_hf(_HF.value, base)
  print(
      hf_import.convert(
          _HF.value, _OUT.value, cfg, shard_devices=jax.device_count()
      )
  )


if __name__ == '__main__':
  flags.mark_flags_as_required(['hf_dir', 'out_dir'])
  app.run(main)
