"""Launch config: the multi-host batch placement benchmark.

  python -m launch.local --config=tpu_configs/launch/hosts.py:tiny \
      --processes=2 --config.flags.workdir=/tmp/hosts

Variants: tiny (CPU, for launch.local), v5p-256 (every host of a slice).
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the launch config for the variant `arg`."""
  variant = arg or 'tiny'
  if variant not in ('tiny', 'v5p-256'):
    raise ValueError(f'unknown variant {variant!r}: tiny, v5p-256')
  config = ml_collections.ConfigDict()
  config.module = 'search_agent.train.hosts_benchmark'
  config.flags = ml_collections.ConfigDict()
  config.flags.workdir = 'gs://search-agent-runs/hosts/run0'
  # Batch size in MiB.
  config.flags.mib = 64
  config.extra_args = ''
  config.env = ml_collections.ConfigDict()
  config.env.DECOUPLE_GCLOUD = 'TRUE'
  config.xpk = ml_collections.ConfigDict()
  config.xpk.cluster = 'search-agent-v5p'
  config.xpk.workload = 'hosts-' + variant
  config.xpk.tpu_type = 'v5p-256' if variant == 'v5p-256' else 'v5p-8'
  config.xpk.device_type = ''
  config.xpk.num_slices = 1
  config.xpk.docker_image = 'gcr.io/search-agent/search-agent:latest'
  config.xpk.project = ''
  config.xpk.zone = ''
  config.xpk.priority = 'medium'
  config.xpk.max_restarts = 0
  config.xpk.restart_on_user_code_failure = False
  if variant == 'tiny':
    config.flags.workdir = 'runs/hosts-tiny'
    config.env.JAX_PLATFORMS = 'cpu'
  return config
