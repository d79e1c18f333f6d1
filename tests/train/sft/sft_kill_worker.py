"""The SFT binary, stopping at chosen points so a test can SIGKILL it there.

  SFT_KILL_POINTS=save_finalize:2,before_save:4 SFT_KILL_DIR=DIR \
      python sft_kill_worker.py --config=... --workdir=...   (the SFT flags)

Runs `search_agent.train.sft`'s main unchanged, with two hooks:
  * save_finalize:K  inside orbax's save of checkpoint K, after every array
    and the data-iterator state are written to the temporary directory, before
    the commit marker and the rename that publish it;
  * before_save:K    after update K's metrics rows are written, before its
    checkpoint is saved.
At a point the process writes DIR/paused-<point> and sleeps until killed.
Each point fires once (its marker stays), so running the same command again
goes past it.
"""

import os
import pathlib
import time

from absl import app
from orbax.checkpoint._src.path import atomicity

from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train.sft import __main__ as sft_main


def _points() -> dict[str, int]:
  spec = os.environ.get('SFT_KILL_POINTS', '')
  return {p.split(':')[0]: int(p.split(':')[1]) for p in spec.split(',') if p}


def _maybe_pause(point: str, step: int) -> None:
  if _points().get(point) != step:
    return
  marker = pathlib.Path(os.environ['SFT_KILL_DIR']) / f'paused-{point}'
  if marker.exists():
    return
  marker.write_text(str(os.getpid()))
  time.sleep(3600)  # SIGKILLed here


def _install() -> None:
  finalize = atomicity.AtomicRenameTemporaryPath.finalize

  async def paused_finalize(self, *args, **kwargs):
    name = self._final_path.name  # pylint: disable=protected-access
    if name.isdigit():
      _maybe_pause('save_finalize', int(name))
    return await finalize(self, *args, **kwargs)

  atomicity.AtomicRenameTemporaryPath.finalize = paused_finalize
  save = checkpoint_lib.Checkpointer.save

  def paused_save(self, step, *args, **kwargs):
    _maybe_pause('before_save', step)
    return save(self, step, *args, **kwargs)

  checkpoint_lib.Checkpointer.save = paused_save


if __name__ == '__main__':
  _install()
  app.run(sft_main.main)
