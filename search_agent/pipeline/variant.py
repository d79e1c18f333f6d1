"""Which pipeline variant the devices call for.

`tpu_configs/pipeline.py` without a variant (or `:auto`) asks `probe` what
JAX sees and `choose` picks the variant: on a GPU or TPU the learning run
sized for one accelerator (`ACCELERATOR_VARIANT`), on CPU the main job's
`tiny`. A variant named on the command line (`:tiny`, `:learn`, ...) wins.

The probe runs in a subprocess: the pipeline's stages are processes of their
own, and a driver holding the accelerator (a TPU admits one process; a GPU
process preallocates most of the memory) would keep it from them.
"""

import dataclasses
import json
import os
import subprocess
import sys

AUTO = 'auto'
CPU_VARIANT = 'tiny'
ACCELERATOR_VARIANT = 'learn_accel'
_ACCELERATORS = ('gpu', 'tpu')
_PROBE = (
    'import json, jax\n'
    'd = jax.devices()\n'
    'print(json.dumps(dict(platform=d[0].platform,'
    ' device_kind=d[0].device_kind, count=len(d))))\n'
)


class ProbeError(RuntimeError):
  """The device probe did not say what JAX sees."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Devices:
  """What JAX sees.

  Attributes:
    platform: 'cpu', 'gpu' or 'tpu'.
    device_kind: The first device's kind ('cpu', 'NVIDIA H100 80GB HBM3').
    count: Devices of that platform.
  """

  platform: str
  device_kind: str
  count: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Choice:
  """The variant and why.

  Attributes:
    variant: The pipeline variant to run.
    device_kind: What JAX sees ('' when not probed).
    reason: One line: why this variant.
  """

  variant: str
  device_kind: str
  reason: str


def probe(python: str = sys.executable, timeout_s: float = 300.0) -> Devices:
  """What JAX sees, asked in a subprocess that exits before any stage runs.

  Raises:
    ProbeError: The subprocess failed, timed out or printed no answer.
  """
  env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE='false')
  try:
    out = subprocess.run(
        [python, '-c', _PROBE], capture_output=True, text=True, env=env,
        timeout=timeout_s, check=False,
    )  # fmt: skip
  except (OSError, subprocess.TimeoutExpired) as e:
    raise ProbeError(f'the device probe did not finish: {e}') from e
  lines = out.stdout.strip().splitlines()
  if out.returncode != 0 or not lines:
    raise ProbeError(
        f'the device probe exited with {out.returncode}:'
        f' {out.stderr.strip()[-500:]}'
    )
  try:
    return Devices(**json.loads(lines[-1]))
  except (ValueError, TypeError) as e:
    raise ProbeError(f'the device probe printed {lines[-1]!r}') from e


def describe(devices: Devices) -> str:
  """'1 cpu device (cpu)', '8 tpu devices (TPU v5 lite)'."""
  s = '' if devices.count == 1 else 's'
  return f'{devices.count} {devices.platform} device{s} ({devices.device_kind})'


def choose(devices: Devices) -> Choice:
  """The variant for `devices`: an accelerator's learning run, else tiny."""
  seen = describe(devices)
  if devices.platform in _ACCELERATORS:
    return Choice(
        variant=ACCELERATOR_VARIANT,
        device_kind=devices.device_kind,
        reason=(
            f'JAX sees {seen}: the learning run sized for one accelerator'
            f' (on CPU: {CPU_VARIANT})'
        ),
    )
  return Choice(
      variant=CPU_VARIANT,
      device_kind=devices.device_kind,
      reason=(
          f'JAX sees {seen}, no GPU or TPU: the CPU main job (on an'
          f' accelerator: {ACCELERATOR_VARIANT})'
      ),
  )


def auto(python: str = sys.executable) -> Choice:
  """`choose(probe(python))`.

  Raises:
    ProbeError: JAX could not say what it sees (the stages could not run
      either).
  """
  return choose(probe(python))


def named(variant: str) -> Choice:
  """A variant named on the command line (devices probed later)."""
  return Choice(
      variant=variant,
      device_kind='',
      reason=f'named on the command line (:{variant})',
  )
