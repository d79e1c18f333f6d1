"""Command-line edge of `eval.run`: a mistyped `--config.x` is one line.

ml_collections reports an unknown override as a traceback from inside flag
parsing. `parse_flags` checks every `--config.a.b=...` against the fields
of tpu_configs/eval.py first and exits with one line naming the closest
field (and keeps absl's own parsing for the rest).
"""

import difflib
import sys
from typing import Any, Iterator, Sequence

from absl import flags

from tpu_configs import eval as eval_config

_PREFIX = '--config.'


def field_paths(c: Any, prefix: str = '') -> Iterator[str]:
  """Every field of a ConfigDict as a dotted path (sections included)."""
  for key in c.keys():
    path = f'{prefix}{key}'
    yield path
    value = c[key]
    if hasattr(value, 'keys') and not isinstance(value, str):
      yield from field_paths(value, path + '.')


def unknown_override(argv: Sequence[str], paths: set[str]) -> str | None:
  """The message for the first `--config.x` naming no field, or None."""
  for arg in argv:
    if not arg.startswith(_PREFIX):
      continue
    path = arg[len(_PREFIX) :].split('=', 1)[0]
    if path in paths:
      continue
    close = difflib.get_close_matches(path, sorted(paths), n=1, cutoff=0.5)
    hint = f'; did you mean --config.{close[0]}?' if close else ''
    return f'unknown config field --config.{path}{hint}'
  return None


def _config_arg(argv: Sequence[str]) -> tuple[str, str] | None:
  """(path, variant) of `--config=path[:variant]`, or None."""
  for arg in argv:
    if arg.startswith('--config='):
      path, _, variant = arg[len('--config=') :].partition(':')
      return path, variant
  return None


def parse_flags(argv: list[str]) -> list[str]:
  """absl's flag parsing behind a check of the `--config.x` overrides."""
  config = _config_arg(argv[1:])
  if config and config[0].endswith('eval.py'):  # another file: absl's checks
    try:
      paths = set(field_paths(eval_config.get_config(config[1])))
    except ValueError as e:  # an unknown variant
      sys.exit(f'eval.run: {e}')
    message = unknown_override(argv[1:], paths)
    if message:
      sys.exit(f'eval.run: {message}')
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    sys.exit(f'eval.run: {e}')
