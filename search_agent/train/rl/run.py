r"""The RL run: rollout workers -> replay queue -> learner -> new weights.

  python -m search_agent.train.rl.run --config=tpu_configs/rl.py[:tiny] \
      --workdir=DIR [--role=all|learner|rollout] [--config.field=value ...]

`all` (default) runs the learner and a rollout worker in one process on
split meshes; `learner` and `rollout` run them as separate processes that
share only DIR, which must be local or an NFS/Filestore mount (the replay
queue claims by rename and delivers by hard link; a gs:// DIR is refused
up front). Rerunning the same command resumes from DIR. Writes
DIR/{metrics.jsonl, parity.json, manifest.json, reward_curves.png, tb/,
checkpoints/, weights/, queue/}.

Pods: `learner` joins its processes into one JAX program first
(`distributed.initialize`; process 0 writes the shared files); `rollout`
never does (one independent worker per host, named after it); `all`
refuses more than one process. docs/pods-rl.md.
"""

import json
import os

# Before JAX starts: 8 simulated host devices, so --role=all splits a CPU
# into a learner and a sampler mesh (no effect on TPU devices). A count given
# already (launch.local's share of each process) is kept.
if 'xla_force_host_platform_device_count' not in os.environ.get(
    'XLA_FLAGS', ''
):
  os.environ['XLA_FLAGS'] = (
      os.environ.get('XLA_FLAGS', '')
      + ' --xla_force_host_platform_device_count=8'
  ).strip()
os.environ.setdefault('DECOUPLE_GCLOUD', 'TRUE')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent import distributed
from search_agent import paths
from search_agent.model import quiet_logs
from search_agent.train.rl import roles
from search_agent.train.rl import selfplay

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'RL config (tpu_configs/rl.py).', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Run directory.')
_ROLE = flags.DEFINE_enum('role', 'all', roles.ROLES, 'What to run.')
flags.mark_flags_as_required(['config', 'workdir'])


def main(argv):
  del argv
  quiet_logs.install()
  if _ROLE.value != 'rollout':  # rollout workers: one per host, never joined
    distributed.initialize()
    # The processes' first gloo collective while they are still together
    # (initialize returns on all at once): gloo allows 30 s between them.
    distributed.barrier('rl-run-start')
  try:
    workdir = paths.require_local(
        _WORKDIR.value,
        'the RL workdir',
        'the learner and the rollout workers share its replay queue, which'
        ' claims by atomic rename and delivers by hard link',
    )
  except paths.NotLocalError as e:
    raise SystemExit(f'rl.run: {e}') from None
  os.makedirs(workdir, exist_ok=True)
  c = _CONFIG.value
  c = selfplay.prepare(c, workdir)  # self-play: the seed pool as tasks
  if _ROLE.value == 'rollout':
    roles.run_rollout(c, workdir)
    return
  run = roles.run_all if _ROLE.value == 'all' else roles.run_learner
  try:
    version = run(c, workdir)
  except distributed.DistributedError as e:
    raise SystemExit(f'rl.run: {e}') from None
  print(json.dumps({'policy_version': version, 'workdir': workdir}))


if __name__ == '__main__':
  app.run(main)
