"""Pipeline stages: each one binary, run as a subprocess, reused by hash.

A `Stage` names a module (`python -m MODULE`), its config file and
`--config.*` overrides, and plain `--flag=value`s. Values may hold
placeholders: `{dir}` is the run directory and `{NAME}` the workdir of stage
NAME (DIR/NAME), which makes NAME an input of the stage. A stage's hash
covers its module, config, overrides and flags as written (placeholders
unresolved, so a moved run directory keeps its hashes), the content hash of
its config file and the hashes of its inputs; a stage whose hash is
unchanged and that finished is reused, so a changed stage reruns itself and
everything downstream of it.
"""

import dataclasses
import hashlib
import importlib.util
import json
import os
import re
from typing import Any, Mapping

from search_agent import digests

_PLACEHOLDER = re.compile(r'\{([a-z_][a-z0-9_]*)\}')
# The stage that writes DIR/report.md (search_agent.pipeline.report).
REPORT_STAGE = 'report'


class StageError(RuntimeError):
  """A stage cannot run, or its binary failed; the message says which."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Stage:
  """One step of the pipeline.

  Attributes:
    name: Stage name; its workdir is DIR/<name>.
    module: The binary, run as `python -m module`.
    config: `--config=` value (a tpu_configs file with `:variant`); '' none.
    overrides: `--config.KEY=VALUE` pairs.
    flags: `--KEY=VALUE` pairs (binaries without a config file).
    workdir_flag: The flag the binary takes its output directory by.
    always: Run it every time (the report reads every stage before it).
  """

  name: str
  module: str
  config: str = ''
  overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  flags: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  workdir_flag: str = 'workdir'
  always: bool = False

  def inputs(self) -> tuple[str, ...]:
    """Names of the stages whose workdirs this one reads."""
    found = []
    for value in (*self.overrides.values(), *self.flags.values()):
      for name in _PLACEHOLDER.findall(_text(value)):
        if name != 'dir' and name != self.name and name not in found:
          found.append(name)
    return tuple(found)

  def check_available(self) -> None:
    """Raises StageError when the module or config variant does not exist."""
    try:
      spec = importlib.util.find_spec(self.module)
    except ModuleNotFoundError:
      spec = None
    if spec is None:
      raise StageError(
          f'stage {self.name!r} runs the module {self.module}, which does'
          ' not exist: correct the module name or drop the stage from'
          ' --config.stages'
      )
    path, _, variant = self.config.partition(':')
    if variant and f"'{variant}'" not in _read(path):
      raise StageError(
          f'stage {self.name!r} asks for the config variant {self.config},'
          f' which {path} does not define: correct the variant'
      )

  def argv(self, python: str, run_dir: str) -> list[str]:
    """The command line, placeholders resolved under `run_dir`."""
    out = [python, '-m', self.module]
    if self.config:
      out.append(f'--config={self.config}')
    for key, value in self.overrides.items():
      out.append(f'--config.{key}={resolve(value, run_dir)}')
    for key, value in self.flags.items():
      out.append(f'--{key}={resolve(value, run_dir)}')
    out.append(f'--{self.workdir_flag}={os.path.join(run_dir, self.name)}')
    return out

  def fingerprint(self) -> dict[str, Any]:
    """What the hash covers, besides the inputs' hashes."""
    config_file = self.config.split(':', 1)[0]
    return {
        'module': self.module,
        'config': self.config,
        'config_sha256': digests.file_sha256(config_file, missing_ok=True),
        'overrides': {k: _text(v) for k, v in self.overrides.items()},
        'flags': {k: _text(v) for k, v in self.flags.items()},
    }


def _read(path: str) -> str:
  try:
    with open(path, encoding='utf-8') as f:
      return f.read()
  except OSError:
    return ''


def _text(value: Any) -> str:
  """A value as the command line writes it."""
  if isinstance(value, (tuple, list)):
    return repr(tuple(value))
  return str(value)


def resolve(value: Any, run_dir: str) -> str:
  """Replaces `{dir}` and `{stage}` placeholders with paths."""

  def path(m: re.Match) -> str:
    name = m.group(1)
    return run_dir if name == 'dir' else os.path.join(run_dir, name)

  return _PLACEHOLDER.sub(path, _text(value))


def stage_hash(stage: Stage, input_hashes: Mapping[str, str]) -> str:
  """The hash deciding reuse: fingerprint plus the inputs' hashes."""
  body = {
      'stage': stage.fingerprint(),
      'inputs': {n: input_hashes[n] for n in stage.inputs()},
  }
  text = json.dumps(body, sort_keys=True)
  return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def check_order(stages: list[Stage]) -> None:
  """Every input of a stage is an earlier stage; names are unique."""
  seen = set()
  for stage in stages:
    if stage.name in seen:
      raise StageError(f'stage {stage.name!r} is listed twice')
    missing = [n for n in stage.inputs() if n not in seen]
    if missing:
      raise StageError(
          f'stage {stage.name!r} reads {missing}, which do not run before it'
          ' (check --config.stages and the placeholders of its settings)'
      )
    seen.add(stage.name)
