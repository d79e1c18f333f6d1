"""Where the learner's microbatches go on its mesh: rows over the batch axes.

Every learner process packs the same host microbatches (loop.py). Each
array of a `learner.Microbatch` has rows as its leading dimension; the rows
are split over the mesh axes of the model's `activation_batch` rule, the
batch layout of the SFT trainer, so each data-parallel shard computes only
its own rows. `jax.make_array_from_callback` gives each device its slice of
the host copy, which is equal on every process (numpy passed straight into
`jit` would be taken as each process's own value). A microbatch whose row
count does not divide the shard count gets padding rows (`learner.padding`:
no token, no loss), which add nothing to the gradient sums. The padding is
built for each device's slice, so no padded host copy is made.
"""

import dataclasses
import math
from typing import Any, Callable, Sequence

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
import numpy as np

from search_agent.model import maxtext_model
from search_agent.train.rl import learner


def batch_axes(model: maxtext_model.Model) -> tuple[str, ...]:
  """The mesh axes of the model's `activation_batch` logical rule."""
  axes = dict(model.mt_config.logical_axis_rules)['activation_batch']
  return (axes,) if isinstance(axes, str) else tuple(axes or ())


class RowPlacement:
  """Places microbatches with their rows split over `axes` of `mesh`."""

  def __init__(self, mesh: jax.sharding.Mesh, axes: Sequence[str]):
    self.mesh = mesh
    self.axes = tuple(axes)
    self.shards = math.prod(mesh.shape[a] for a in self.axes)
    self.sharding = NamedSharding(mesh, P(self.axes or None))
    self._gather = jax.jit(lambda x: x, out_shardings=NamedSharding(mesh, P()))

  @classmethod
  def of_model(cls, model: maxtext_model.Model) -> 'RowPlacement':
    return cls(model.mesh, batch_axes(model))

  def padded_rows(self, rows: int) -> int:
    """`rows` rounded up to a multiple of the shard count."""
    return -(-rows // self.shards) * self.shards

  def describe(self, microbatch_size: int) -> str:
    """A line for the log: the split and the padding of a full microbatch."""
    sizes = {a: self.mesh.shape[a] for a in self.axes}
    n = self.padded_rows(microbatch_size)
    text = f'microbatch rows split {self.shards} ways over {sizes}'
    if n != microbatch_size:
      text += (
          f'; microbatch_size={microbatch_size} is padded to {n} rows (a'
          f' multiple of {self.shards} wastes none)'
      )
    return text

  def microbatch(self, mb: learner.Microbatch) -> learner.Microbatch:
    """`mb` as global arrays, rows split over the batch axes, padded."""
    n = self.padded_rows(mb.tokens_bt.shape[0])
    fill = learner.padding(mb)

    def place(x, x_fill):
      return None if x is None else self._rows(x, x_fill, n)

    return dataclasses.replace(
        mb,
        tokens_bt=place(mb.tokens_bt, fill.tokens_bt),
        batch=jax.tree.map(place, mb.batch, fill.batch),
        valid_bt=place(mb.valid_bt, fill.valid_bt),
        routing_btlk=place(mb.routing_btlk, fill.routing_btlk),
    )

  def pad(self, mb: learner.Microbatch) -> learner.Microbatch:
    """`mb` on the host, padded to a row count the shards divide."""
    return learner.pad_rows(mb, self.padded_rows(mb.tokens_bt.shape[0]))

  def gathered(self, fn: Callable[..., jax.Array]) -> Callable[..., Any]:
    """`fn(params, tokens_bt, **extras)` fed row-split global arrays (rows
    must divide: `pad` first), its result replicated so that every process
    can read it on the host (the step-0 parity check)."""

    def call(params, tokens_bt, **extras):
      place = lambda x: self._rows(x, None, x.shape[0])
      return self._gather(
          fn(params, place(tokens_bt), **jax.tree.map(place, extras))
      )

    return call

  def _rows(self, x_b: np.ndarray, fill_1, n: int) -> jax.Array:
    """Host rows `x_b` (then `n - b` copies of the row `fill_1`), split."""
    b = x_b.shape[0]
    if n % self.shards or (n > b and fill_1 is None):
      raise ValueError(
          f'{b} rows do not split {self.shards} ways; pad them first'
      )

    def part(idx):
      start, stop, _ = idx[0].indices(n)
      rest = idx[1:]
      real = x_b[(slice(min(start, b), min(stop, b)),) + rest]
      extra = stop - max(start, b)
      if extra <= 0:
        return real
      row = fill_1[(slice(None),) + rest]
      return np.concatenate(
          [real, np.broadcast_to(row, (extra,) + row.shape[1:])]
      )

    return jax.make_array_from_callback(
        (n,) + x_b.shape[1:], self.sharding, part
    )
