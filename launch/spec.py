"""What a launch runs: one binary with its flags and environment.

A launch config (tpu_configs/launch/*.py) names the binary as a module
(`python -m {module}`), its flags, the environment, and where to run it
(`xpk`: cluster, TPU type, slices, image). `launch.xpk` and `launch.local`
turn the same config into an `xpk workload create` command or a local
subprocess, so both run exactly the same argv.
"""

import dataclasses
import importlib.util
import pathlib
import re
import shlex
import shutil
import subprocess
from typing import Any, Mapping, Sequence

REPO = pathlib.Path(__file__).resolve().parents[1]

# xpk's own workload-name check (AI-Hypercomputer/xpk,
# src/xpk/parser/validators.py: workload_name_type).
WORKLOAD_NAME = re.compile(r'[a-z]([-a-z0-9]*[a-z0-9])?')
WORKLOAD_NAME_MAX = 40
PRIORITIES = ('very-low', 'low', 'medium', 'high', 'very-high')


class LaunchError(ValueError):
  """A launch config is invalid or its binary cannot be found."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Binary:
  """The program to run.

  Attributes:
    module: Python module run with `python -m`.
    flags: Flag name -> value, passed as `--name=value` (sorted by name).
    env: Environment variables set for the binary.
    extra_args: Arguments appended after the flags as given, e.g. config
      overrides of the binary (`--config.layout.context=4`).
  """

  module: str
  flags: Mapping[str, Any]
  env: Mapping[str, str]
  extra_args: tuple[str, ...] = ()

  def argv(self, python: str = 'python') -> list[str]:
    """The command line, `[python, '-m', module, '--flag=value', ...]`."""
    flags = [f'--{k}={_flag_value(v)}' for k, v in sorted(self.flags.items())]
    return [python, '-m', self.module, *flags, *self.extra_args]

  def check_module(self) -> None:
    """Raises LaunchError unless `python -m {module}` can run from here."""
    target = self.module
    try:
      spec = importlib.util.find_spec(target)
      if spec is not None and spec.submodule_search_locations is not None:
        target += '.__main__'  # a package runs its __main__ module
        spec = importlib.util.find_spec(target)
    except ModuleNotFoundError:
      spec = None
    if spec is None:
      raise LaunchError(
          f'binary module {target!r} is not importable from this tree, so'
          f' `python -m {self.module}` cannot run; fix config.module (the'
          ' image is built from this tree)'
      )


def _flag_value(value: Any) -> str:
  if isinstance(value, bool):
    return 'true' if value else 'false'
  return str(value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class XpkTarget:
  """Where XPK runs the binary (flags of `xpk workload create`).

  Attributes:
    cluster: GKE cluster made by `xpk cluster create`.
    workload: Workload name (xpk: lowercase, digits, '-', <= 40 chars).
    tpu_type: Accelerator, e.g. 'v5p-128' (or '' and set device_type).
    device_type: Non-TPU device, e.g. 'n2-standard-32-1' for CPU roles.
    num_slices: Number of slices (multislice over DCN when > 1).
    docker_image: Image holding this tree and its venv.
    project: GCP project ('' = gcloud's default).
    zone: GCP zone ('' = gcloud's default).
    priority: One of PRIORITIES.
    max_restarts: JobSet restarts on failure.
    restart_on_user_code_failure: Also restart when our binary exits non-zero
      (xpk's `--restart-on-user-code-failure`). Without it xpk restarts only
      after infrastructure failures, so a crash in our code is never resumed
      from its checkpoint although `max_restarts` is set.
  """

  cluster: str
  workload: str
  tpu_type: str = ''
  device_type: str = ''
  num_slices: int = 1
  docker_image: str
  project: str = ''
  zone: str = ''
  priority: str = 'medium'
  max_restarts: int = 0
  restart_on_user_code_failure: bool = False

  def __post_init__(self):
    name = self.workload
    if not WORKLOAD_NAME.fullmatch(name) or len(name) > WORKLOAD_NAME_MAX:
      raise LaunchError(
          f'workload name {name!r} must match {WORKLOAD_NAME.pattern} and have'
          f' at most {WORKLOAD_NAME_MAX} characters (xpk rejects it otherwise)'
      )
    if bool(self.tpu_type) == bool(self.device_type):
      raise LaunchError(
          'set exactly one of xpk.tpu_type and xpk.device_type (got'
          f' {self.tpu_type!r}, {self.device_type!r})'
      )
    if self.num_slices < 1:
      raise LaunchError(f'xpk.num_slices must be >= 1, got {self.num_slices}')
    if self.priority not in PRIORITIES:
      raise LaunchError(
          f'xpk.priority {self.priority!r} is not one of {PRIORITIES}'
      )
    for field in ('cluster', 'docker_image'):
      if not getattr(self, field):
        raise LaunchError(f'xpk.{field} is empty; set it in the launch config')


def binary_from_config(config: Any) -> Binary:
  """The Binary of a launch ConfigDict (module, flags, env, extra_args)."""
  return Binary(
      module=config.module,
      flags=dict(config.flags),
      env={k: str(v) for k, v in dict(config.env).items()},
      extra_args=tuple(shlex.split(config.extra_args)),
  )


def xpk_from_config(config: Any) -> XpkTarget:
  """The XpkTarget of a launch ConfigDict (its `xpk` field)."""
  return XpkTarget(**dict(config.xpk))


def shell_command(binary: Binary) -> str:
  """The binary as one shell string (what xpk's --command runs)."""
  return shlex.join(binary.argv())


def xpk_command(binary: Binary, target: XpkTarget) -> list[str]:
  """The `xpk workload create ...` argv for running `binary` on `target`.

  Flags as AI-Hypercomputer/xpk defines them (src/xpk/parser/workload.py,
  `workload create`): --cluster, --workload and --command (required),
  --tpu-type | --device-type (one required, mutually exclusive),
  --num-slices, --docker-image (used as is, no image build), --priority,
  --max-restarts, --restart-on-user-code-failure, --env NAME=value
  (repeatable); --project and --zone from
  src/xpk/parser/common.py (add_shared_arguments).
  """
  cmd = [
      'xpk',
      'workload',
      'create',
      f'--cluster={target.cluster}',
      f'--workload={target.workload}',
  ]
  if target.tpu_type:
    cmd.append(f'--tpu-type={target.tpu_type}')
  else:
    cmd.append(f'--device-type={target.device_type}')
  cmd += [
      f'--num-slices={target.num_slices}',
      f'--docker-image={target.docker_image}',
      f'--priority={target.priority}',
      f'--max-restarts={target.max_restarts}',
  ]
  if target.restart_on_user_code_failure:
    cmd.append('--restart-on-user-code-failure')
  if target.project:
    cmd.append(f'--project={target.project}')
  if target.zone:
    cmd.append(f'--zone={target.zone}')
  cmd += [f'--env={k}={v}' for k, v in sorted(binary.env.items())]
  cmd.append(f'--command={shell_command(binary)}')
  return cmd


def launch(cmd: Sequence[str]) -> int:
  """Runs the xpk command; returns its exit status."""
  if shutil.which(cmd[0]) is None:
    raise LaunchError(
        f'{cmd[0]!r} is not on PATH: `pip install xpk` (AI-Hypercomputer/xpk)'
        ' or use --dry_run to print the command'
    )
  return subprocess.run(list(cmd), check=False).returncode
