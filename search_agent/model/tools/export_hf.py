r"""Exports MaxText parameters as an HF safetensors checkpoint, offline.

  python -m search_agent.model.tools.export_hf \
      --checkpoint=gs://BUCKET/sft/run0 --preset=qwen3-30b-a3b \
      --hf_base_dir=/models/qwen3-30b-a3b --out_dir=/models/sft-run0-hf

reads the newest finished checkpoint of a training workdir (`--step` picks
another) or, with `--params_path`, parameters written by `import_hf`, on the
local CPU devices (host memory must hold the parameters), and writes
`model.safetensors` (sharded past 5 GiB, with its index), `config.json` and
the base checkpoint's tokenizer files to `--out_dir`: a directory vLLM or
SGLang serves as is (`vllm serve OUT_DIR`). The model is the training
config's: `--config=tpu_configs/sft.py` (its `model` field, overridable as
`--config.model.vocab_size=...`), else `--preset` or `--model_json`; with
`--hf_base_dir` its sizes come from the base config.json, as on import.
Prints the output directory.
"""

import json

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.model import families
from search_agent.model import hf_export
from search_agent.model import hf_import
from search_agent.model import quiet_logs

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Training config whose `model` field is the model.'
)
_CKPT = flags.DEFINE_string('checkpoint', '', 'Training workdir to export.')
_STEP = flags.DEFINE_integer('step', -1, 'Update step (-1: the newest).')
_PARAMS = flags.DEFINE_string(
    'params_path', '', 'Parameters written by import_hf (instead).'
)
_PRESET = flags.DEFINE_string('preset', 'qwen3-30b-a3b', 'Model preset.')
_MODEL_JSON = flags.DEFINE_string(
    'model_json', '', 'A ModelConfig as JSON (instead of --preset).'
)
_BASE = flags.DEFINE_string(
    'hf_base_dir', '', 'Base HF checkpoint: config.json, tokenizer files.'
)
_OUT = flags.DEFINE_string('out_dir', None, 'Output HF checkpoint directory.')
_DTYPE = flags.DEFINE_enum(
    'dtype', 'bfloat16', ['bfloat16', 'float32'], 'Saved dtype.'
)


def _model():
  if _CONFIG.value is not None:
    base = families.model_from_dict(_CONFIG.value.model)
  elif _MODEL_JSON.value:
    base = families.model_from_dict(json.loads(_MODEL_JSON.value))
  else:
    base = families.model_preset(_PRESET.value)
  if _BASE.value:
    return hf_import.model_config_for_hf(_BASE.value, base)
  return base


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  quiet_logs.install(('orbax', 'maxtext'))
  hf_export.export_checkpoint(
      _model(),
      _OUT.value,
      checkpoint=_CKPT.value,
      step=_STEP.value,
      params_path=_PARAMS.value,
      hf_base_dir=_BASE.value,
      dtype=_DTYPE.value,
  )
  print(_OUT.value)


if __name__ == '__main__':
  flags.mark_flag_as_required('out_dir')
  app.run(main)
