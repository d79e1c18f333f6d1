"""grain pipeline: trajectory JSONL -> rendered sequences -> packed updates.

Each trajectory passes through the context policy (`agent.context`: every
assistant turn sees exactly the context the rollout policy showed it) and the
token-exact renderer (`chat.renderer`), giving token ids and a loss mask.
Sequences are shifted into (inputs, targets, loss_mask) with the mask taken
on the target token, fitted to `seq_len` at whole supervised turns (a turn
whose context does not fit is dropped and counted, never cut: `to_examples`,
`Coverage`), first-fit packed into rows of `seq_len` with segment ids and
positions (segment 0 is padding), and batched into one optimizer update:
arrays [micro_steps, micro_batch, seq_len]. `packed_updates` and
`packed_validation` do the packing for any random-access source and
element -> examples function (the pretraining mode's corpus texts too).

The iterator is a grain DatasetIterator: `get_state()` / `set_state()` make
resume exact (the SFT checkpoint stores that state).

Several hosts (`data.shards`): the update's rows come from `shards`
independent loader streams; stream k reads elements k, k + S, ... of the
shuffled source, packs its own rows and fills rows [k b/S, (k+1) b/S) of
every microbatch. `Updates` runs only the streams whose rows one process's
devices hold, so a process reads, tokenizes and packs its share, and the
global batch depends on `shards`, never on the process count.
"""

import dataclasses
import json
from typing import Any, Callable, Iterator, Sequence

import grain
import numpy as np

from search_agent import paths
from search_agent.agent import chatml
from search_agent.agent import context as context_lib
from search_agent.agent import token_record
from search_agent.agent import trajectory as trajectory_lib
from search_agent.chat import renderer as renderer_lib

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
      (end 0 = to the end).
    val_lines: The same for val_path.
    mode: 'sft' (trajectories: loss on assistant turns) or 'pretrain'
      (`[{title, text}]` corpus JSON: loss on every token,
      `train.sft.pretrain_data`).
    synthetic_fraction: Pretrain: share of synthetic copy/recall sequences.
    synthetic_kinds: Pretrain: the synthetic kinds used in turn ('copy',
      'recall', 'shuffle', 'names'; `train.sft.pretrain_data`).
    rehearsal_path: SFT: a `[{title, text}]` corpus whose pretraining texts
      (with `synthetic_fraction` and `synthetic_kinds`) are mixed into the
      training elements (`train.sft.rehearsal`); '' = none.
    rehearsal_fraction: SFT: the share of training elements that are
      rehearsal texts, in [0, 1).
    loss_positions_multiple: When > 0, each update also carries
      `score_index` [M, b, S] (`score_index`): every row's supervised
      positions first, so the output head and the loss run on S positions
      instead of seq_len (S: the update's most supervised tokens in one row,
      rounded up to a multiple of this; one compiled step per S met). 0 (or
      S >= seq_len): every position is scored.
    shards: Independent loader streams (see the module docstring); a
      process loads only the streams whose rows its devices hold. 1: one
      stream, which every process of a multi-host run reads whole.
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
  mode: str = 'sft'
  synthetic_fraction: float = 0.0
  synthetic_kinds: tuple[str, ...] = ('copy', 'recall')
  rehearsal_path: str = ''
  rehearsal_fraction: float = 0.0
  loss_positions_multiple: int = 0
  shards: int = 1

  def __post_init__(self):
    if self.shards < 1 or self.micro_batch % self.shards:
      raise DataError(
          f'data.shards={self.shards} must be >= 1 and divide'
          f' data.micro_batch={self.micro_batch} (each loader stream fills'
          ' micro_batch / shards rows of every microbatch)'
      )
    if self.loss_positions_multiple < 0:
      raise ValueError(
          'loss_positions_multiple must be >= 0 (0 = score every position),'
          f' got {self.loss_positions_multiple}'
      )


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
    with paths.path(path).open('rb') as f:
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
    with paths.path(self._path).open('rb') as f:
      f.seek(self._offsets[index])
      line = f.readline()
    try:
      return self._parse(json.loads(line))
    except (json.JSONDecodeError, trajectory_lib.TrajectoryFormatError) as e:
      raise DataError(f'{self._path}: trajectory #{index}: {e}') from e


def make_render_fn(
    tokenizer, policy: str, keep_last_n_observations: int, template: str
) -> RenderFn:
  """Trajectory -> [(token_ids, loss_mask)]: its segments under the policy."""
  view = context_lib.policy_view(policy, keep_last_n_observations)
  chat_template = renderer_lib.get_template(template)

  def render(traj: trajectory_lib.Trajectory):
    # RL's segments of the same turns (agent.token_record): one
    # implementation, so a demonstration trains what RL trains.
    segments = token_record.rendered_segments(
        traj.messages, view, tokenizer, chat_template
    )
    return [(s.token_ids, s.loss_mask) for s in segments]

  return render


def loss_runs(mask: Sequence[int]) -> list[tuple[int, int]]:
  """[start, end) of each maximal run of supervised tokens (one per turn)."""
  m = np.concatenate([[0], np.asarray(mask, np.int8) != 0, [0]]).astype(np.int8)
  edges = np.flatnonzero(np.diff(m))
  return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


@dataclasses.dataclass
class Coverage:
  """How many supervised tokens and turns survive fitting to `seq_len`.

  A turn is a maximal run of supervised tokens; the final turn is the last one
  of a trajectory (its answer).
  """

  sequences: int = 0
  supervised_tokens: int = 0
  kept_tokens: int = 0
  turns: int = 0
  kept_turns: int = 0
  final_turns: int = 0
  kept_final_turns: int = 0

  def add(self, other: 'Coverage') -> None:
    for f in dataclasses.fields(self):
      setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

  def as_dict(self) -> dict[str, float]:
    out = dataclasses.asdict(self)
    out['dropped_tokens'] = self.supervised_tokens - self.kept_tokens
    out['dropped_turns'] = self.turns - self.kept_turns
    out['supervised_token_coverage'] = self.kept_tokens / max(
        self.supervised_tokens, 1
    )
    out['final_turn_coverage'] = self.kept_final_turns / max(
        self.final_turns, 1
    )
    return out


def to_examples(
    sequences: Sequence[tuple[Any, Any]],
    seq_len: int,
    coverage: Coverage | None = None,
) -> list[Example]:
  """One trajectory's (token_ids, loss_mask) views -> shifted examples.

  inputs = ids[:-1], targets = ids[1:], loss_mask = mask[1:] (a target token
  is supervised when the mask marks it). Nothing is cut silently: each view
  keeps its longest prefix that ends after a whole supervised turn and fits
  `seq_len` targets (a real prefix: every kept token sees exactly its
  rollout context); the turns after it, whose context does not fit, are
  dropped and counted in `coverage`. Views with no supervised turn that fits
  are dropped.

  Args:
    sequences: The views of one trajectory, in order.
    seq_len: Packed row length (targets per example).
    coverage: Counts added here when given.

  Returns:
    The examples.
  """
  out = []
  cov = Coverage()
  final_kept = None
  for ids, mask in sequences:
    cov.sequences += 1
    mask = np.array(mask, np.int32)
    mask[:1] = 0  # the first token is never a target
    runs = loss_runs(mask)
    fit = [(s, e) for s, e in runs if e <= seq_len + 1]
    cov.turns += len(runs)
    cov.supervised_tokens += sum(e - s for s, e in runs)
    if runs:
      final_kept = bool(fit) and fit[-1] == runs[-1]
    if not fit:
      continue
    cut = fit[-1][1]
    cov.kept_turns += len(fit)
    cov.kept_tokens += sum(e - s for s, e in fit)
    ids = np.asarray(ids, np.int32)[:cut]
    out.append(
        {'inputs': ids[:-1], 'targets': ids[1:], 'loss_mask': mask[1:cut]}
    )
  if final_kept is not None:
    cov.final_turns += 1
    cov.kept_final_turns += int(final_kept)
  if coverage is not None:
    coverage.add(cov)
  return out


ExamplesFn = Callable[[Any], list[Example]]


def sft_examples(render_fn: RenderFn, seq_len: int) -> ExamplesFn:
  """Trajectory -> its fitted examples (`to_examples` of its views)."""
  return lambda traj: to_examples(render_fn(traj), seq_len)


class _Examples(grain.experimental.FlatMapTransform):

  def __init__(self, examples_fn: ExamplesFn, max_fan_out: int):
    self._fn = examples_fn
    self.max_fan_out = max_fan_out

  def flat_map(self, element):
    return self._fn(element)


def _stack(
    rows: Sequence[Example],
    cfg: DataConfig,
    micro_batch: int | None = None,
    score: bool = True,
) -> Example:
  """[M, b, T] arrays of `rows`; `score_index` added for a whole batch when
  `score` (a batch of several streams or processes gets it from its caller,
  which agrees on the width: `host_batch.to_global`)."""
  micro_batch = micro_batch or cfg.micro_batch
  shape = (cfg.micro_steps, micro_batch, cfg.seq_len)
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
  if not score or micro_batch != cfg.micro_batch:
    return batch
  return with_score_index(batch, cfg.loss_positions_multiple)


def with_score_index(batch: Example, multiple: int) -> Example:
  """`batch` with `score_index` added where gathering saves positions
  (`multiple` > 0 and S < seq_len; `score_index`)."""
  if multiple:
    index = score_index(batch['loss_mask'], multiple)
    if index is not None:
      batch['score_index'] = index
  return batch


def score_width(loss_mask: np.ndarray, multiple: int) -> int:
  """S for `score_index`: the most supervised positions of any row, rounded
  up to a multiple of `multiple` (at least one multiple)."""
  most = int((loss_mask > 0).sum(-1).max(initial=0))
  return max(-(-most // multiple), 1) * multiple


def score_index(
    loss_mask: np.ndarray, multiple: int, width: int | None = None
) -> np.ndarray | None:
  """Positions to score per row: the supervised ones first, in order.

  Args:
    loss_mask: [..., T] (non-zero = supervised).
    multiple: S is the most supervised positions of any row, rounded up to a
      multiple of this.
    width: S as agreed over a batch whose rows other processes hold
      (`score_width` of the whole batch); None computes it from `loss_mask`.

  Returns:
    int32 [..., S]: each row's supervised positions ascending, then its
    unsupervised ones ascending (their mask is 0, so gathering the mask with
    it keeps every supervised position exactly once); None when S >= T
    (nothing to save).
  """
  t = loss_mask.shape[-1]
  s = score_width(loss_mask, multiple) if width is None else width
  if s >= t:
    return None
  order = np.argsort(loss_mask <= 0, axis=-1, kind='stable')
  return order[..., :s].astype(np.int32)


def packed_updates(
    source,
    examples_fn: ExamplesFn,
    cfg: DataConfig,
    *,
    shuffle: bool = True,
    max_fan_out: int = 512,
    shard: int = 0,
    score: bool = True,
) -> grain.IterDataset:
  """Updates (dicts of [M, b, T] int32 arrays) from any random-access source.

  Args:
    source: Elements by index (trajectories, corpus texts).
    examples_fn: Element -> its training examples (each <= seq_len).
    cfg: Shapes, seed and epochs.
    shuffle: Shuffle the elements and the packing bins.
    max_fan_out: The most examples one element may yield.
    shard: The loader stream (of `cfg.shards`): elements shard, shard + S,
      ... of the shuffled source, packed into [M, b/S, T] arrays.
    score: Add `score_index` (False when the caller adds it).
  """
  ds = grain.MapDataset.source(source)
  if shuffle:
    ds = ds.shuffle(seed=cfg.seed)
  if cfg.shards > 1:
    ds = ds[shard :: cfg.shards]
  ds = ds.repeat(cfg.num_epochs)
  it = grain.experimental.FlatMapIterDataset(
      ds.to_iter_dataset(), _Examples(examples_fn, max_fan_out)
  )
  lengths = {k: cfg.seq_len for k in FEATURES}
  packed = grain.experimental.FirstFitPackIterDataset(
      it,
      length_struct=lengths,
      num_packing_bins=cfg.num_packing_bins,
      seed=cfg.seed,
      shuffle_bins=shuffle,
  )
  micro_batch = cfg.micro_batch // cfg.shards
  return packed.batch(
      cfg.micro_steps * micro_batch,
      drop_remainder=True,
      batch_fn=lambda rows: _stack(rows, cfg, micro_batch, score),
  )


class Updates:
  """One process's rows of every update, from the streams that hold them.

  Iterates [M, rows, T] arrays: rows `rows` of each microbatch (the slice of
  the global batch this process's devices hold), concatenated from loader
  streams `shards` (`packed_updates(shard=k, score=False)`). `score_index`
  is left to the caller, whose width must be agreed over every process's
  rows (`score_width`). `get_state` / `set_state` cover every stream it runs.
  """

  def __init__(
      self,
      make_stream: Callable[[int], grain.IterDataset],
      cfg: DataConfig,
      rows: tuple[int, int],
  ):
    per = cfg.micro_batch // cfg.shards
    start, stop = rows
    if not 0 <= start < stop <= cfg.micro_batch:
      raise DataError(f'rows {rows} outside micro_batch={cfg.micro_batch}')
    self.shards = tuple(range(start // per, -(-stop // per)))
    offset = self.shards[0] * per
    self._cut = slice(start - offset, stop - offset)
    self._its = {k: iter(make_stream(k)) for k in self.shards}

  def __iter__(self) -> 'Updates':
    return self

  def __next__(self) -> Example:
    parts = [next(self._its[k]) for k in self.shards]
    return {
        key: np.concatenate([p[key] for p in parts], axis=1)[:, self._cut]
        for key in parts[0]
    }

  def get_state(self) -> dict[str, Any]:
    return {str(k): it.get_state() for k, it in self._its.items()}

  def set_state(self, state: dict[str, Any]) -> None:
    missing = [k for k in self.shards if str(k) not in state]
    if missing:
      raise DataError(
          f'the saved data position lacks loader streams {missing} (saved:'
          f' {sorted(state)}); resume with the data.shards and process'
          ' count the run was started with'
      )
    for k, it in self._its.items():
      it.set_state(state[str(k)])


def update_dataset(
    path: str,
    render_fn: RenderFn,
    cfg: DataConfig,
    *,
    shuffle: bool = True,
    max_fan_out: int = 512,
) -> grain.IterDataset:
  """The dataset of SFT updates from a trajectory file (`packed_updates`)."""
  return packed_updates(
      JsonlTrajectories(path, cfg.train_lines, cfg.format),
      sft_examples(render_fn, cfg.seq_len),
      cfg,
      shuffle=shuffle,
      max_fan_out=max_fan_out,
  )


def validation_batches(
    path: str, render_fn: RenderFn, cfg: DataConfig
) -> Iterator[Example]:
  """SFT validation batches of a trajectory file (`packed_validation`)."""
  return packed_validation(
      JsonlTrajectories(path, cfg.val_lines, cfg.format),
      sft_examples(render_fn, cfg.seq_len),
      cfg,
  )


def packed_validation(
    source, examples_fn: ExamplesFn, cfg: DataConfig
) -> Iterator[Example]:
  """One deterministic pass over validation data, as update-shaped batches.

  The last partial batch is padded with empty rows (segment 0, no loss), so
  every validation token counts exactly once.
  """
  rows_ds = grain.experimental.FirstFitPackIterDataset(
      grain.experimental.FlatMapIterDataset(
          grain.MapDataset.source(source).to_iter_dataset(),
          _Examples(examples_fn, 512),
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
