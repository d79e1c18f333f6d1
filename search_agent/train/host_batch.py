"""A process's rows of a batch -> one global array per feature.

On a mesh spanning several processes each process holds a block of every
[M, b, T] batch: the rows of b its devices hold (and, under context
parallelism across hosts, a span of T). `rows` says which rows a process
must load; `to_global` turns those rows into global arrays with
`jax.make_array_from_process_local_data`. No process sends its rows to the
others: a whole batch `device_put` from every host is an all-gather
(../shared/notes/multihost: 0.7-1.2 s against 0.02 s for 64 MiB on two
processes), and numpy passed into `jit` is taken as replicated, so hosts
holding different rows would silently compute different results.
"""

import statistics
import time
from typing import Mapping

import jax
from jax.experimental import multihost_utils
import numpy as np

from search_agent.train import data as data_lib


class LayoutError(ValueError):
  """A process's devices do not hold one contiguous block of the batch."""


def block(
    sharding: jax.sharding.Sharding, shape: tuple[int, ...]
) -> tuple[slice, ...]:
  """The block of a global `shape` this process's devices hold, per dim.

  Raises:
    LayoutError: The devices' shards do not tile one block (a layout that
      interleaves hosts along an axis).
  """
  index = sharding.addressable_devices_indices_map(shape).values()
  out = []
  for d, size in enumerate(shape):
    spans = {
        (s[d].start or 0, size if s[d].stop is None else s[d].stop)
        for s in index
    }
    start, stop = min(a for a, _ in spans), max(b for _, b in spans)
    covered = sum(b - a for a, b in spans)
    if covered < stop - start and len(spans) > 1:
      raise LayoutError(
          f'dim {d} of {shape}: this process holds {sorted(spans)}, not one'
          ' contiguous span; order the mesh so each host holds a block'
      )
    out.append(slice(start, stop))
  return tuple(out)


def rows(
    sharding: jax.sharding.Sharding, shape: tuple[int, int, int]
) -> tuple[int, int]:
  """[start, stop) of the rows (dim 1 of [M, b, T]) this process holds."""
  b = block(sharding, shape)[1]
  return b.start, b.stop


def agreed_width(loss_mask: np.ndarray, multiple: int) -> int:
  """`data.score_width` over every process's rows (a collective when the
  program has several processes)."""
  width = data_lib.score_width(loss_mask, multiple)
  if jax.process_count() == 1:
    return width
  widths = multihost_utils.process_allgather(np.int32(width))
  return int(np.max(widths))


def to_global(
    local: Mapping[str, np.ndarray],
    sharding: jax.sharding.Sharding,
    micro_batch: int,
    loss_positions_multiple: int = 0,
) -> dict[str, jax.Array]:
  """Global [M, b, ...] arrays from this process's rows of each feature.

  Args:
    local: Feature -> [M, rows, T] (the rows of `rows`), whole along T.
    sharding: The batch sharding (b over the batch axes, T over context).
    micro_batch: b of the global batch.
    loss_positions_multiple: When > 0, `score_index` is added with a width
      agreed over every process (`data.score_index`).

  Returns:
    Feature -> global jax.Array.
  """
  local = dict(local)
  mask = local['loss_mask']
  if loss_positions_multiple:
    width = agreed_width(mask, loss_positions_multiple)
    index = data_lib.score_index(mask, loss_positions_multiple, width)
    if index is not None:
      local['score_index'] = index
  out = {}
  for key, value in local.items():
    shape = (value.shape[0], micro_batch, *value.shape[2:])
    cut = block(sharding, shape)
    part = value[(cut[0], slice(None), *cut[2:])]
    out[key] = jax.make_array_from_process_local_data(sharding, part, shape)
  return out


def from_whole(
    batch: Mapping[str, np.ndarray],
    sharding: jax.sharding.Sharding,
    loss_positions_multiple: int = 0,
) -> dict[str, jax.Array]:
  """`to_global` of a batch every process holds whole (validation)."""
  b = next(iter(batch.values())).shape[1]
  start, stop = rows(sharding, next(iter(batch.values())).shape)
  local = {k: v[:, start:stop] for k, v in batch.items() if k != 'score_index'}
  return to_global(local, sharding, b, loss_positions_multiple)


def _timed(fn, repeats: int) -> float:
  jax.block_until_ready(fn())
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  return statistics.median(times)


def placement_seconds(mib: int, repeats: int) -> dict:
  """Seconds to place a `mib` MiB [M, b, T] int32 batch on a mesh of every
  device: `device_put` of the whole batch on every process against
  `to_global` of each process's own rows (medians of `repeats`)."""
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ('batch',))
  sharding = jax.sharding.NamedSharding(
      mesh, jax.sharding.PartitionSpec(None, 'batch', None)
  )
  b, t = jax.device_count(), 2048
  m = max(mib * 2**20 // (4 * b * t), 1)
  whole = np.arange(m * b * t, dtype=np.int32).reshape(m, b, t)
  start, stop = rows(sharding, whole.shape)
  own = {'inputs': whole[:, start:stop], 'loss_mask': whole[:, start:stop]}
  put = _timed(lambda: jax.device_put(whole, sharding), repeats)
  local = _timed(lambda: to_global(own, sharding, b)['inputs'], repeats)
  return {
      'processes': jax.process_count(),
      'devices': jax.device_count(),
      'batch_mib': whole.nbytes / 2**20,
      'device_put_s': put,
      # Two features are placed: report the time of one.
      'own_rows_s': local / 2,
      'device_put_over_own_rows': put / (local / 2),
  }
