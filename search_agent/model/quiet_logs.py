"""Keeps third-party INFO chatter (orbax's ~40 lines per checkpoint) out of
the binaries' logs, so their progress lines stay readable.

orbax logs through absl (`from absl import logging`), so every record is the
'absl' logger's and carries the orbax source file as its pathname. `install`
adds a filter to absl's handler and the root logger's handlers that drops
records below `level` whose source file lies in one of `packages` (or whose
logger is named after one); warnings and errors still show, and so does
everything our own code logs.

  from search_agent.model import quiet_logs
  quiet_logs.install()  # first line of a binary's main()
"""

import logging
import os
from typing import Sequence

from absl import logging as absl_logging

# Site-packages directories whose INFO lines are dropped by default.
QUIET_PACKAGES = ('orbax',)


class DropInfoFrom(logging.Filter):
  """Drops records under `level` logged from code of `packages`."""

  def __init__(self, packages: Sequence[str], level: int = logging.WARNING):
    super().__init__()
    self.packages = tuple(packages)
    self.level = level
    self._dirs = tuple(f'{os.sep}{p}{os.sep}' for p in self.packages)
    self.dropped = 0

  def filter(self, record: logging.LogRecord) -> bool:
    if record.levelno >= self.level or not self._from_packages(record):
      return True
    self.dropped += 1
    return False

  def _from_packages(self, record: logging.LogRecord) -> bool:
    name = record.name.split('.')[0]
    return name in self.packages or any(
        d in (record.pathname or '') for d in self._dirs
    )


def install(
    packages: Sequence[str] = QUIET_PACKAGES, level: int = logging.WARNING
) -> DropInfoFrom:
  """Adds the filter to absl's handler and the root logger's handlers.

  Idempotent for the same handlers: a handler holding a DropInfoFrom already
  is left alone. Returns the filter (its `dropped` counts the lines kept out).
  """
  quiet = DropInfoFrom(packages, level)
  handlers = [absl_logging.get_absl_handler(), *logging.getLogger().handlers]
  for handler in dict.fromkeys(handlers):
    if not any(isinstance(f, DropInfoFrom) for f in handler.filters):
      handler.addFilter(quiet)
  return quiet
