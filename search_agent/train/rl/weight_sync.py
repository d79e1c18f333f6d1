"""Weight sync: versioned, atomic orbax params directories under the run.

The learner publishes policy version v as `<root>/<v>/state` (an orbax PyTree
`{'params': ...}`, the trainers' checkpoint layout, so a rollout server's
`/update_weights {path: <root>, step: v}` reads it too; written to
`<root>/.tmp-<v>-<uuid>/` and renamed: a version directory is complete or
absent) and keeps the last `keep`. Samplers poll
`latest_version()` between requests and load a newer version onto their own
mesh; a version that fails to load (deleted underneath, corrupt) leaves the
sampler on its old weights, and the failure is reported, never raised into
the rollout.
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

# The trainers' checkpoint layout (model/checkpoint_params.py).
STATE_ITEM = 'state'
PARAMS_KEY = 'params'


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

  def publish(self, params: Any, version: int) -> pathlib.Path:
    """Writes `version` atomically; drops versions older than the last keep."""
    final = self.root / str(version)
    if final.exists():
      return final  # a resumed learner republishing the same weights
    tmp = self.root / f'.tmp-{version}-{uuid.uuid4().hex}'
    ckpt = ocp.PyTreeCheckpointer()
    ckpt.save(tmp / STATE_ITEM, {PARAMS_KEY: params})
    os.replace(tmp, final)
    for v in self.versions()[: -self.keep]:
      shutil.rmtree(self.root / str(v), ignore_errors=True)
    return final

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
    self._failed: set[int] = set()

  @property
  def policy_version(self) -> int:
    return self.sampler.policy_version

  def refresh(self) -> int:
    """Loads the newest version if it is newer; returns the served version."""
    with self._lock:
      latest = self.store.latest_version()
      current = self.sampler.policy_version
      if latest is None or latest <= current or latest in self._failed:
        return current
      try:
        params = self.store.load(latest, self.sampler.abstract_params())
      except Exception as e:  # pylint: disable=broad-exception-caught
        # Any load failure: keep serving the old weights and say so.
        self._failed.add(latest)
        self.load_errors.append((latest, f'{type(e).__name__}: {e}'))
        logging.warning(
            'sampler keeps version %d: loading %d failed: %s',
            current,
            latest,
            e,
        )
        return current
      self.sampler.set_params(params, policy_version=latest)
      self.loads.append(latest)
      return latest

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
