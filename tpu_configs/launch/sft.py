"""Launch config: SFT (`python -m search_agent.train.sft`) on a TPU pod.

Variants (`--config=tpu_configs/launch/sft.py:VARIANT`):
  v5p-256 (default): 128 chips, one JAX device each: the recipe's 128-way
    layout (open-recipe.md, SFT: TP=2, CP=8, EP=8 on 16 nodes x 8 GPUs).
  v5p-128: 64 chips (v5p-N counts TensorCores, two per chip): the same
    recipe with context parallelism 4 instead of 8.
  tiny: the tiny pretraining run (the same binary and trainer on corpus
    text, 8 rows of 512 tokens an update) laid out for 8 devices
    (`sft.py:pretrain_tiny,pod`), for `python -m launch.local
    --processes=N` (N hosts sharing 8 CPU devices).
Placeholders to override on the command line: xpk.cluster, xpk.project,
xpk.zone, xpk.docker_image, flags.workdir (e.g.
`--config.flags.workdir=gs://my-bucket/sft/run1`).
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the launch config for the variant `arg`."""
  variant = arg or 'v5p-256'
  if variant not in ('v5p-256', 'v5p-128', 'tiny'):
    raise ValueError(f'unknown variant {variant!r}: v5p-256, v5p-128, tiny')
  config = ml_collections.ConfigDict()
  # The binary, run as `python -m {module} --{flag}={value}...`.
  config.module = 'search_agent.train.sft'
  # Its flags, passed sorted by name.
  config.flags = ml_collections.ConfigDict()
  config.flags.config = 'tpu_configs/sft.py'
  config.flags.workdir = 'gs://search-agent-runs/sft/run0'
  # More arguments for the binary, shell-quoted (e.g. its config overrides).
  config.extra_args = ''
  # Environment variables for the binary.
  config.env = ml_collections.ConfigDict()
  config.env.DECOUPLE_GCLOUD = 'TRUE'
  # Where XPK runs it (flags of `xpk workload create`; see launch/xpk.py).
  config.xpk = ml_collections.ConfigDict()
  config.xpk.cluster = 'search-agent-v5p'
  config.xpk.workload = 'sft-' + variant
  config.xpk.tpu_type = variant if variant != 'tiny' else 'v5p-8'
  config.xpk.device_type = ''
  config.xpk.num_slices = 1
  config.xpk.docker_image = 'gcr.io/search-agent/search-agent:latest'
  config.xpk.project = ''
  config.xpk.zone = ''
  config.xpk.priority = 'medium'
  # JobSet restarts; SFT resumes from its last orbax checkpoint.
  config.xpk.max_restarts = 3
  # Our binaries resume from their last checkpoint, so restart after a crash
  # in our code too, not only after infrastructure failures.
  config.xpk.restart_on_user_code_failure = True
  if variant == 'v5p-128':
    # 64 devices: the recipe's TP=2, EP=8 with context parallelism 4.
    config.extra_args = '--config.layout.context=4'
  if variant == 'tiny':
    config.flags.config = 'tpu_configs/sft.py:pretrain_tiny,pod'
    config.flags.workdir = 'runs/sft-tiny'
    config.env.JAX_PLATFORMS = 'cpu'
  return config
