"""Launch config: the RL roles, each its own XPK workload.

Variants (`--config=tpu_configs/launch/rl.py:ROLE`):
  learner (default): the RL learner on a v5p-256 slice (its own mesh).
  rollout: rollout workers (in-process JAX sampler) on 2 v5p-64 slices.
  search: the search service (`python -m index.serve`, no JAX) on a CPU
    node pool (`--device-type`, xpk's CPU workloads).
  simulate: the scheduler simulator
    (`search_agent.train.rl.simulator_benchmark`) with the recipe's RL
    config, on a CPU node.
  tiny: the simulator with the tiny RL config, for `python -m launch.local`.
  tiny_learner, tiny_rollout: the tiny RL learner and one rollout worker on
    CPU, sharing `runs/rl-tiny`, for `python -m launch.local`: start the
    worker, then the learner with `--processes=2` (one JAX program over two
    processes); the worker stops by itself when the learner is done.
Processes (docs/pods-rl.md): the learner's hosts (32 on v5p-256) run one
JAX program; process 0 (TPU_WORKER_ID=0) alone writes metrics, state,
parity, manifest, the replay-queue journal and renames weight versions,
every process writes its shards of checkpoints and weights. Each rollout
host (16 on 2 x v5p-64) runs its own worker on its 4 local chips, never
joined to the others, named s<MEGASCALE_SLICE_ID>-h<TPU_WORKER_ID>.
The learner and the rollout workers (`search_agent.train.rl.run --role=...`)
share one workdir on a POSIX filesystem both clusters mount: the replay queue
claims by atomic rename and delivers by hard link, which object stores and
Cloud Storage FUSE lack, so the workdir is a Filestore mount (`/rl`, see
launch/README.md) and rl.run refuses a gs:// one. Placeholders to override as
in tpu_configs/launch/sft.py.
"""

import ml_collections

_ROLES = (
    'learner',
    'rollout',
    'search',
    'simulate',
    'tiny',
    'tiny_learner',
    'tiny_rollout',
)
# libtpu's view of one host as its own slice (4 chips, 2x2x1 on v5p), so
# each rollout host samples alone instead of waiting for the slice's other
# hosts (the Cloud TPU multi-process settings; not yet tried on a pod).
_ONE_HOST_TPU = {
    'TPU_PROCESS_BOUNDS': '1,1,1',
    'TPU_CHIPS_PER_PROCESS_BOUNDS': '2,2,1',
    'TPU_VISIBLE_CHIPS': '0,1,2,3',
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the launch config for the role `arg`."""
  role = arg or 'learner'
  if role not in _ROLES:
    raise ValueError(f'unknown role {role!r}: one of {_ROLES}')
  config = ml_collections.ConfigDict()
  # The binary, run as `python -m {module} --{flag}={value}...`.
  config.module = 'search_agent.train.rl.run'
  # Its flags, passed sorted by name.
  config.flags = ml_collections.ConfigDict()
  config.flags.config = 'tpu_configs/rl.py'
  config.flags.role = role
  # A Filestore (NFS) mount on both clusters, never gs:// (see above).
  config.flags.workdir = '/rl/run0'
  # More arguments for the binary, shell-quoted (e.g. its config overrides).
  config.extra_args = ''
  # Environment variables for the binary.
  config.env = ml_collections.ConfigDict()
  config.env.DECOUPLE_GCLOUD = 'TRUE'
  # Where XPK runs it (flags of `xpk workload create`; see launch/spec.py).
  config.xpk = ml_collections.ConfigDict()
  config.xpk.cluster = 'search-agent-v5p'
  config.xpk.workload = 'rl-' + role.replace('_', '-')
  config.xpk.tpu_type = 'v5p-256'
  config.xpk.device_type = ''
  config.xpk.num_slices = 1
  config.xpk.docker_image = 'gcr.io/search-agent/search-agent:latest'
  config.xpk.project = ''
  config.xpk.zone = ''
  config.xpk.priority = 'medium'
  config.xpk.max_restarts = 3
  # Our binaries resume from their last checkpoint, so restart after a crash
  # in our code too, not only after infrastructure failures.
  config.xpk.restart_on_user_code_failure = True
  if role == 'rollout':
    config.xpk.tpu_type = 'v5p-64'
    config.xpk.num_slices = 2
    config.env.update(_ONE_HOST_TPU)
  elif role in ('search', 'simulate', 'tiny'):
    config.flags = ml_collections.ConfigDict()
    config.flags.config = 'tpu_configs/rl.py'
    config.flags.workdir = f'gs://search-agent-runs/{role}/run0'
    config.module = 'search_agent.train.rl.simulator_benchmark'
    config.xpk.tpu_type = ''
    config.xpk.device_type = 'n2-standard-32-1'
  if role == 'search':
    config.module = 'index.serve'
    config.flags.config = 'tpu_configs/search/serve.py'
  if role == 'tiny':
    config.flags.config = 'tpu_configs/rl.py:tiny'
    config.flags.workdir = 'runs/rl-sim-tiny'
    config.env.JAX_PLATFORMS = 'cpu'
  if role in ('tiny_learner', 'tiny_rollout'):
    config.flags.config = 'tpu_configs/rl.py:tiny'
    config.flags.role = role.removeprefix('tiny_')
    config.flags.workdir = 'runs/rl-tiny'
    config.env.JAX_PLATFORMS = 'cpu'
    config.xpk.tpu_type = ''
    config.xpk.device_type = 'n2-standard-32-1'
  return config
