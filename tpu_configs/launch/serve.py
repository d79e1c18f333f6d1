"""Launch config: the rollout server (`python -m search_agent.serving`).

Variants (`--config=tpu_configs/launch/serve.py:VARIANT`):
  v5p-8 (default): one server on a single-host v5p-8 slice (4 chips; the
    engine's mesh is that host's devices: the server is single-host, so
    pick a slice one host drives). qwen3-30b-a3b in bf16 fits in its HBM.
  tiny: the tiny CPU server, for `python -m launch.local`.
N rollout servers are N workloads of this config, each with its own
`--config.xpk.workload=rollout-server-<i>`; rollout workers list their
addresses in ServerConfig.base_urls (search_agent/llm/server_client.py):
a new trajectory goes to the server with the fewest requests in flight,
its later turns stay on it (its KV is there). The server reloads weights
with `POST /update_weights {path, version}` from the learner's checkpoint
dir (gs:// works, orbax). Placeholders to override as in sft.py.
"""

import ml_collections


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the launch config for the variant `arg`."""
  variant = arg or 'v5p-8'
  if variant not in ('v5p-8', 'tiny'):
    raise ValueError(f'unknown variant {variant!r}: v5p-8, tiny')
  config = ml_collections.ConfigDict()
  # The binary, run as `python -m {module} --{flag}={value}...`.
  config.module = 'search_agent.serving'
  config.flags = ml_collections.ConfigDict()
  config.flags.config = 'tpu_configs/serve.py'
  config.flags.port = 8000
  # More arguments for the binary, shell-quoted: the weights to start from,
  # e.g. '--config.model.checkpoint_dir=gs://search-agent-runs/sft/run0'.
  config.extra_args = ''
  config.env = ml_collections.ConfigDict()
  config.env.DECOUPLE_GCLOUD = 'TRUE'
  config.xpk = ml_collections.ConfigDict()
  config.xpk.cluster = 'search-agent-v5p'
  config.xpk.workload = 'rollout-server-0'
  config.xpk.tpu_type = 'v5p-8'
  config.xpk.device_type = ''
  config.xpk.num_slices = 1
  config.xpk.docker_image = 'gcr.io/search-agent/search-agent:latest'
  config.xpk.project = ''
  config.xpk.zone = ''
  config.xpk.priority = 'medium'
  # A restarted server starts empty (no sessions): workers' next turns
  # prefill again, and its weights come from checkpoint_dir / the next
  # /update_weights.
  config.xpk.max_restarts = 3
  config.xpk.restart_on_user_code_failure = True
  if variant == 'tiny':
    config.flags.config = 'tpu_configs/serve.py:tiny'
    config.env.JAX_PLATFORMS = 'cpu'
  return config
