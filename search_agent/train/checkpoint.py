"""Orbax checkpoints of a train state plus the data iterator's position.

A checkpoint at update `step` holds the state after `step` updates (params,
optimizer state) and the grain iterator state after the batches those updates
consumed, so a run killed at any point restarts from the last checkpoint and
reproduces the uninterrupted run's loss curve. On several processes the save
is collective (each process writes its shards of the state) and the data
position is kept per process (`save` gathers every process's iterator state;
`restore` hands each its own). Saves are synchronous: a step
directory either is complete or is not listed (orbax writes to a temporary
directory and renames it; on an object store, where there is no rename, it
publishes the step with a commit marker). `directory` may be local or a URI
(`gs://...`): see `search_agent.paths`.
"""

import dataclasses
import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from search_agent import distributed
from search_agent import paths

# The data item of a multi-process checkpoint: {_PER_PROCESS: [state, ...]}.
_PER_PROCESS = 'per_process'


class ResumeError(ValueError):
  """A checkpoint cannot be resumed by this run (another process count)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckpointConfig:
  """When and how many checkpoints to keep.

  Attributes:
    every: Save after every `every` updates (0 = only at the end).
    keep: How many recent checkpoints to keep.
  """

  every: int = 100
  keep: int = 3


class Checkpointer:
  """Saves and restores {'state': pytree, 'data': json} per update step."""

  def __init__(self, directory: str | os.PathLike[str], cfg: CheckpointConfig):
    self._cfg = cfg
    self._manager = ocp.CheckpointManager(
        paths.path(directory),
        options=ocp.CheckpointManagerOptions(
            max_to_keep=cfg.keep, enable_async_checkpointing=False
        ),
    )

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def should_save(self, step: int, last_step: int) -> bool:
    if step == last_step:
      return True
    return self._cfg.every > 0 and step % self._cfg.every == 0

  def save(self, step: int, state: Any, data_state: dict[str, Any]) -> None:
    """Saves `state` and this process's `data_state` (on every process)."""
    if jax.process_count() > 1:
      data_state = {_PER_PROCESS: distributed.gather(data_state)}
    self._manager.save(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardSave(state),
            data=ocp.args.JsonSave(data_state),
        ),
        force=True,
    )
    self._manager.wait_until_finished()

  def restore(self, step: int, like: Any) -> tuple[Any, dict[str, Any]]:
    """Restores `step` into the shapes, dtypes and shardings of `like`."""
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    out = self._manager.restore(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract),
            data=ocp.args.JsonRestore(),
        ),
    )
    return out['state'], _own(out['data'])

  def restore_params(self, step: int, like: Any) -> Any:
    """Only the parameters of `step` (state['params']), shaped like `like`.

    The optimizer state and data position are not read, so a run with another
    optimizer or data can start from these parameters.
    """
    restore_args = jax.tree.map(
        lambda x: ocp.ArrayRestoreArgs(
            sharding=x.sharding, global_shape=x.shape, dtype=x.dtype
        ),
        like,
    )
    item = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    path = self._manager.directory / str(step) / 'state'
    with ocp.PyTreeCheckpointer() as reader:
      out = reader.restore(
          path,
          args=ocp.args.PyTreeRestore(
              item={'params': item},
              restore_args={'params': restore_args},
              partial_restore=True,
          ),
      )
    return out['params']

  def close(self) -> None:
    self._manager.close()


def _own(data: dict[str, Any]) -> dict[str, Any]:
  """This process's entry of a restored data item."""
  states = data.get(_PER_PROCESS) if isinstance(data, dict) else None
  count, index = jax.process_count(), jax.process_index()
  if states is None:
    if count > 1:
      raise ResumeError(
          f'the checkpoint was written by one process; this run has {count}:'
          ' resume it with one process'
      )
    return data
  if len(states) != count:
    raise ResumeError(
        f'the checkpoint was written by {len(states)} processes; this run'
        f' has {count}: resume with {len(states)}'
    )
  return states[index]
