"""Weight sync: versioned, atomic orbax params directories under the run.

The learner publishes policy version v as `<root>/<v>/state` (an orbax PyTree
`{'params': ...}`, the trainers' checkpoint layout, so a rollout server's
`/update_weights {path: <root>, step: v}` reads it too; written to
`<root>/.tmp-<v>-<uuid>/` and renamed: a version directory is complete or
absent) and keeps the last `keep`. Each publish stamps its directory with a
fresh id (`<v>/publish_id`): a learner that resumes from an older checkpoint
first removes the versions past it (`rollback`), and whatever it publishes
under a reused number replaces the old directory, so samplers tell the new
weights from the lost ones by the stamp. Samplers poll `latest()` between
requests and load whatever differs from what they serve, onto their own
mesh; a version that fails to load (deleted underneath, corrupt) leaves the
sampler on its old weights, and the failure is reported, never raised into
the rollout.

From N learner processes (one JAX program) `publish` is collective: process
0 picks the temp name and broadcasts it, every process writes its shards
(orbax), and process 0 alone renames and prunes, with barriers between; see
docs/pods-rl.md.
"""

import os
import pathlib
import shutil
import threading
from typing import Any, Callable, Sequence
import uuid

from absl import logging
import jax
import orbax.checkpoint as ocp

from search_agent import distributed

# The trainers' checkpoint layout (model/checkpoint_params.py).
STATE_ITEM = 'state'
PARAMS_KEY = 'params'
# The id of one publish, written into the version directory.
STAMP_FILE = 'publish_id'


class WeightSyncError(RuntimeError):
  """No published weights where some were expected."""


class WeightStore:
  """Publishes and reads versioned parameter directories."""

  def __init__(self, root: str | os.PathLike[str], keep: int = 3):
    if keep < 1:
      raise ValueError(f'keep must be >= 1, got {keep}')
    self.root = pathlib.Path(root).absolute()
    self.root.mkdir(parents=True, exist_ok=True)
    self.keep = keep

  def versions(self) -> list[int]:
    return sorted(int(p.name) for p in self.root.iterdir() if p.name.isdigit())

  def latest_version(self) -> int | None:
    v = self.versions()
    return v[-1] if v else None

  def stamp(self, version: int) -> str:
    """The publish id of `version` ('' if absent or published unstamped)."""
    try:
      return (self.root / str(version) / STAMP_FILE).read_text('utf-8')
    except (FileNotFoundError, NotADirectoryError):
      return ''

  def latest(self) -> tuple[int, str] | None:
    """(newest version, its publish id), or None when nothing is published."""
    v = self.latest_version()
    return None if v is None else (v, self.stamp(v))

  def publish(self, params: Any, version: int) -> pathlib.Path:
    """Writes `version` atomically (replacing one published before under that
    number); drops versions older than the last `keep`.

    Collective across the processes of one JAX program (every process calls
    it with its shards of `params`); every leaf must be a global array.
    """
    final = self.root / str(version)
    name = distributed.broadcast(f'.tmp-{version}-{uuid.uuid4().hex}')
    tmp = self.root / name
    ocp.PyTreeCheckpointer().save(tmp / STATE_ITEM, {PARAMS_KEY: params})
    distributed.barrier(f'weights-saved-{name}')
    if distributed.is_writer():
      (tmp / STAMP_FILE).write_text(name, 'utf-8')
      _replace_dir(tmp, final)
      for v in self.versions()[: -self.keep]:
        shutil.rmtree(self.root / str(v), ignore_errors=True)
      logging.info('published weight version %d (%s)', version, name)
    distributed.barrier(f'weights-renamed-{name}')
    return final

  def rollback(self, version: int) -> list[int]:
    """Removes versions newer than `version` and unfinished publishes.

    A learner resumed from checkpoint `version` calls it (process 0 only)
    before publishing again: the removed versions came from updates the
    checkpoint does not hold. Returns the removed versions.
    """
    gone = [v for v in self.versions() if v > version]
    for v in gone:
      shutil.rmtree(self.root / str(v), ignore_errors=True)
    for p in self.root.iterdir():
      if p.name.startswith(('.tmp-', '.old-')):
        shutil.rmtree(p, ignore_errors=True)
    if gone:
      logging.info('removed weight versions %s past checkpoint %d', gone,
                   version)  # fmt: skip
    return gone

  def load(self, version: int, like: Any) -> Any:
    """Restores `version` into the shapes/dtypes/shardings of `like`."""
    path = self.root / str(version) / STATE_ITEM
    abstract = {
        PARAMS_KEY: jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(
                x.shape, x.dtype, sharding=x.sharding
            ),
            like,
        )
    }
    return ocp.PyTreeCheckpointer().restore(
        path,
        args=ocp.args.PyTreeRestore(
            item=abstract,
            restore_args=ocp.checkpoint_utils.construct_restore_args(abstract),
        ),
    )[PARAMS_KEY]


def _replace_dir(src: pathlib.Path, dst: pathlib.Path) -> None:
  """Renames directory `src` to `dst`, replacing a `dst` that exists.

  The old `dst` is first renamed aside, so a reader sees the old directory,
  briefly none, or the new one: never a mix of the two.
  """
  old = None
  if dst.exists():
    old = dst.with_name(f'.old-{dst.name}-{uuid.uuid4().hex}')
    os.rename(dst, old)
  os.replace(src, dst)
  if old is not None:
    shutil.rmtree(old, ignore_errors=True)


class SyncedSampler:
  """A `Sampler` that loads the newest published weights between requests.

  `generate` first checks the store; a newer version is loaded and stamped
  on every token generated after it (this sampler prefills each request
  from scratch, so in-flight trajectories continue on recomputed context).

  Attributes:
    load_errors: (version, message) of every failed load.
    loads: Versions loaded, in order.
  """

  def __init__(self, sampler: Any, store: WeightStore):
    self.sampler = sampler
    self.store = store
    self.batch_size = sampler.batch_size
    self.max_prompt_len = sampler.max_prompt_len
    self.load_errors: list[tuple[int, str]] = []
    self.loads: list[int] = []
    self._lock = threading.Lock()
    self._failed: set[tuple[int, str]] = set()
    self._stamp = ''  # publish id of the served weights

  @property
  def policy_version(self) -> int:
    return self.sampler.policy_version

  def refresh(self) -> int:
    """Loads the newest publish if it is not what the sampler serves.

    A newer version, or the same number published again (a resumed learner
    replaced the weights of an update its checkpoint lost), or, while a
    version is being replaced, an older one: the served weights always carry
    the number they were published under. Returns the served version.
    """
    with self._lock:
      latest = self.store.latest()
      current = self.sampler.policy_version
      if latest is None or latest == (current, self._stamp):
        return current
      if latest in self._failed:
        return current
      version, stamp = latest
      try:
        params = self.store.load(version, self.sampler.abstract_params())
      except Exception as e:  # pylint: disable=broad-exception-caught
        # Any load failure: keep serving the old weights and say so.
        self._failed.add(latest)
        self.load_errors.append((version, f'{type(e).__name__}: {e}'))
        logging.warning(
            'sampler keeps version %d: loading %d failed: %s',
            current,
            version,
            e,
        )
        return current
      self.sampler.set_params(params, policy_version=version)
      self._stamp = stamp
      self.loads.append(version)
      logging.info('sampler loaded weight version %d (%s)', version, stamp)
      return version

  def wait_for_weights(
      self, timeout_s: float, sleep: Callable[[float], None]
  ) -> int:
    """Blocks until a first version is loaded (the learner publishes v0)."""
    waited = 0.0
    while self.refresh() < 0:
      if waited > timeout_s:
        raise WeightSyncError(
            f'no weights under {self.store.root} after {timeout_s}s; is the'
            ' learner running?'
        )
      sleep(0.5)
      waited += 0.5
    return self.sampler.policy_version

  def generate(self, prompts: Sequence[Sequence[int]], **kwargs) -> list[Any]:
    self.refresh()
    return self.sampler.generate(prompts, **kwargs)
