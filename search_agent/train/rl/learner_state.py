"""The learner's durable bookkeeping between checkpoints.

`StateFile` holds the scheduler state, the task pool position and the pass
of every in-flight group, rewritten atomically (temp file, fsync, rename)
after every change and BEFORE the work it describes is enqueued, so a
restarted learner knows every group its predecessor dispatched. Checkpoints
hold params and optimizer state; on restart the scheduler is rolled back to
the checkpoint's version (`Scheduler.from_state`).
"""

import json
import os
import pathlib
from typing import Any


class StateFile:
  """One JSON document, replaced atomically."""

  def __init__(self, path: str | os.PathLike[str]):
    self.path = pathlib.Path(path)
    self.path.parent.mkdir(parents=True, exist_ok=True)

  def read(self) -> dict[str, Any] | None:
    if not self.path.exists():
      return None
    return json.loads(self.path.read_text(encoding='utf-8'))

  def write(self, state: dict[str, Any]) -> None:
    tmp = self.path.with_name(self.path.name + '.tmp')
    with open(tmp, 'w', encoding='utf-8') as f:
      json.dump(state, f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, self.path)
    fd = os.open(self.path.parent, os.O_RDONLY)
    try:
      os.fsync(fd)
    finally:
      os.close(fd)
