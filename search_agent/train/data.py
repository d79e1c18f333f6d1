"""grain pipeline: trajectory JSONL -> rendered sequences -> packed updates.

Each trajectory passes through the context policy (`agent.context`: every
assistant turn sees exactly the context the rollout policy showed it) and the
token-exact renderer (`agent.renderer`), giving token ids and a loss mask.
Sequences are shifted into (inputs, targets, loss_mask) with the mask taken
on the target token, truncated to `seq_len`, first-fit packed into rows of
`seq_len` with segment ids and positions (segment 0 is padding), and batched
into one optimizer update: arrays [micro_steps, micro_batch, seq_len].

The iterator is a grain DatasetIterator: `get_state()` / `set_state()` make
resume exact (the SFT checkpoint stores that state).
"""

import dataclasses
import json
from typing import Any, Callable, Iterator, Sequence

import grain
import numpy as np

from search_agent.agent import chatml
from search_agent.agent import context as context_lib
from search_agent.agent import renderer as renderer_lib
from search_agent.agent import trajectory as trajectory_lib

_PARSERS = {
    'trajectory': trajectory_lib.Trajectory.from_json,
    'chatml': chatml.import_chatml_line,
}
Example = dict[str, np.ndarray]
RenderFn = Callable[[trajectory_lib.Trajectory], Sequence[tuple[Any, Any]]]
FEATURES = ('inputs', 'targets', 'loss_mask')


class DataError(ValueError):
  """The training data cannot be read or yields nothing to train on."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataConfig:
  """Where SFT data comes from and how updates are shaped.

  Attributes:
    train_path: Trajectory JSONL (search_agent.agent.trajectory format).
    val_path: Validation trajectory JSONL ('' = none).
    seq_len: Packed row length (the recipe's packing capacity).
    micro_batch: Rows per microbatch.
    micro_steps: Microbatches per optimizer update (gradient accumulation).
    num_packing_bins: Rows filled at once by first-fit packing.
    seed: Shuffle seed.
    num_epochs: Passes over the data (None = repeat forever).
    format: 'trajectory' (our JSONL) or 'chatml' (`<tool_call>` chatml
      lines, imported with agent.chatml).
    train_lines: [start, stop) of the non-empty lines of train_path to use
      (stop 0 = to the end).
    val_lines: The same for val_path.
  """

  train_path: str
  val_path: str = ''
  format: str = 'trajectory'
  train_lines: tuple[int, int] = (0, 0)
  val_lines: tuple[int, int] = (0, 0)
  seq_len: int
  micro_batch: int = 1
  micro_steps: int = 1
  num_packing_bins: int = 8
  seed: int = 0
  num_epochs: int | None = 1


class JsonlTrajectories:
  """Random-access source over the lines of a trajectory JSONL file."""

  def __init__(
      self,
      path: str,
      lines: tuple[int, int] = (0, 0),
      fmt: str = 'trajectory',
  ):
    if fmt not in _PARSERS:
      raise DataError(f'format {fmt!r} is unknown; use one of {_PARSERS}')
    self._path = path
    self._parse = _PARSERS[fmt]
    offsets = []
    with open(path, 'rb') as f:
      offset = 0
      for line in f:
        if line.strip():
          offsets.append(offset)
        offset += len(line)
    start, stop = lines
    self._offsets = offsets[start : stop or None]
    if not self._offsets:
      raise DataError(f'{path} lines {lines} hold no trajectories')

  def __len__(self) -> int:
    return len(self._offsets)

  def __getitem__(self, index: int) -> trajectory_lib.Trajectory:
    with open(self._path, 'rb') as f:
      f.seek(self._offsets[index])
      line = f.readline()
    try:
      return self._parse(json.loads(line))
    except (json.JSONDecodeError, trajectory_lib.TrajectoryFormatError) as e:
      raise DataError(f'{self._path}: trajectory #{index}: {e}') from e


def make_render_fn(
    tokenizer, policy: str, keep_last_n_observations: int, template: str
) -> RenderFn:
  """Trajectory -> [(token_ids, loss_mask)]: context policy, then render."""
  view = context_lib.policy_view(policy, keep_last_n_observations)
  chat_template = renderer_lib.get_template(template)

  def render(traj: trajectory_lib.Trajectory):
    out = []
    for seq in context_lib.training_views(traj.messages, view):
      r = renderer_lib.render(seq, tokenizer, template=chat_template)
      out.append((r.token_ids, r.loss_mask))
    return out

  return render


def to_examples(
    sequences: Sequence[tuple[Any, Any]], seq_len: int
) -> list[Example]:
  """(token_ids, loss_mask) pairs -> shifted, truncated training examples.

  inputs = ids[:-1], targets = ids[1:], loss_mask = mask[1:] (a target token
  is supervised when the mask marks it). Sequences with no supervised target
  are dropped.
  """
  out = []
  for ids, mask in sequences:
    ids = np.asarray(ids, np.int32)[: seq_len + 1]
    mask = np.asarray(mask, np.int32)[: seq_len + 1]
    if len(ids) < 2 or not mask[1:].any():
      continue
    out.append({'inputs': ids[:-1], 'targets': ids[1:], 'loss_mask': mask[1:]})
  return out


class _Render(grain.experimental.FlatMapTransform):

  def __init__(self, render_fn: RenderFn, seq_len: int, max_fan_out: int):
    self._render = render_fn
    self._seq_len = seq_len
    self.max_fan_out = max_fan_out

  def flat_map(self, element):
    return to_examples(self._render(element), self._seq_len)


def _stack(rows: Sequence[Example], cfg: DataConfig) -> Example:
  shape = (cfg.micro_steps, cfg.micro_batch, cfg.seq_len)
  batch = {}
  for key in ('inputs', 'targets', 'loss_mask'):
    batch[key] = np.stack([r[key] for r in rows]).reshape(shape)
  batch['segment_ids'] = np.stack(
      [r['inputs_segment_ids'] for r in rows]
  ).reshape(shape)
  batch['positions'] = np.stack([r['inputs_positions'] for r in rows]).reshape(
      shape
  )
  batch['loss_mask'] = batch['loss_mask'] * (batch['segment_ids'] > 0)
  return batch


def update_dataset(
    path: str,
    render_fn: RenderFn,
    cfg: DataConfig,
    *,
    shuffle: bool = True,
    max_fan_out: int = 512,
) -> grain.IterDataset:
  """The dataset of optimizer updates (dicts of [M, b, T] int32 arrays)."""
  ds = grain.MapDataset.source(
      JsonlTrajectories(path, cfg.train_lines, cfg.format)
  )
  if shuffle:
    ds = ds.shuffle(seed=cfg.seed)
  ds = ds.repeat(cfg.num_epochs)
  it = grain.experimental.FlatMapIterDataset(
      ds.to_iter_dataset(), _Render(render_fn, cfg.seq_len, max_fan_out)
  )
  lengths = {k: cfg.seq_len for k in FEATURES}
  packed = grain.experimental.FirstFitPackIterDataset(
      it,
      length_struct=lengths,
      num_packing_bins=cfg.num_packing_bins,
      seed=cfg.seed,
      shuffle_bins=shuffle,
  )
  rows = cfg.micro_steps * cfg.micro_batch
  return packed.batch(rows, drop_remainder=True, batch_fn=_batch_fn(cfg))


def _batch_fn(cfg: DataConfig):
  return lambda rows: _stack(rows, cfg)


def validation_batches(
    path: str, render_fn: RenderFn, cfg: DataConfig
) -> Iterator[Example]:
  """One deterministic pass over validation data, as update-shaped batches.

  The last partial batch is padded with empty rows (segment 0, no loss), so
  every validation token counts exactly once.
  """
  rows_ds = grain.experimental.FirstFitPackIterDataset(
      grain.experimental.FlatMapIterDataset(
          grain.MapDataset.source(
              JsonlTrajectories(path, cfg.val_lines, cfg.format)
          ).to_iter_dataset(),
          _Render(render_fn, cfg.seq_len, 512),
      ),
      length_struct={k: cfg.seq_len for k in FEATURES},
      num_packing_bins=cfg.num_packing_bins,
      shuffle_bins=False,
  )
  rows = cfg.micro_steps * cfg.micro_batch
  buf: list[Example] = []
  for row in rows_ds:
    buf.append(row)
    if len(buf) == rows:
      yield _stack(buf, cfg)
      buf = []
  if buf:
    empty = {k: np.zeros_like(v) for k, v in buf[0].items()}
    yield _stack(buf + [empty] * (rows - len(buf)), cfg)
