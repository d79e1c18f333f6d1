"""The parameters of a trainer checkpoint, restored alone onto any mesh.

The trainers (search_agent/train/checkpoint.py) save, per update step,
`<workdir>/checkpoints/<step>/state` = {'params': ..., 'opt_state': ...} and
`<step>/data` = the data iterator's position. A sampler (eval, RL rollouts)
needs only the weights: `restore_params` reads the `params` subtree alone
(an orbax partial restore: the optimizer state is never read) straight into
the shapes, dtypes and shardings of a target tree (e.g.
`Sampler.abstract_params()`, or a learner's `Model.params`), after checking
that the checkpoint holds exactly the parameters the target model has.

No MaxText here: only orbax and JAX.
"""

import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from search_agent import paths

STATE_ITEM = 'state'
PARAMS_KEY = 'params'
CHECKPOINTS_SUBDIR = 'checkpoints'
LATEST = -1
_SHOWN = 5  # differences listed in a mismatch error


class CheckpointError(ValueError):
  """No usable checkpoint: missing directory, no checkpoint, unknown step."""


class CheckpointMismatchError(CheckpointError):
  """The checkpoint's parameters are not the target model's."""


def checkpoint_root(path: str | os.PathLike[str]) -> str:
  """The step directories' parent: `path` or its `checkpoints/`."""
  root = paths.path(path)
  if not root.is_dir():
    raise CheckpointError(
        f'checkpoint directory {root} does not exist; pass a training'
        f' workdir (holding {CHECKPOINTS_SUBDIR}/) or its'
        f' {CHECKPOINTS_SUBDIR}/ directory'
    )
  sub = root / CHECKPOINTS_SUBDIR
  return os.fspath(sub if sub.is_dir() else root)


def resolve_step(
    path: str | os.PathLike[str], step: int = LATEST
) -> tuple[str, int]:
  """(step directory, step) of `step` (LATEST = the newest) under `path`.

  Only finished checkpoints count (orbax renames a step's temporary
  directory when its save completes).

  Raises:
    CheckpointError: The directory is missing, holds no finished checkpoint,
      not `step`, or `step`'s checkpoint is not a trainer's.
  """
  root = checkpoint_root(path)
  found = {
      ocp.utils.step_from_checkpoint_name(p.name): os.fspath(p)
      for p in ocp.utils.checkpoint_steps_paths(root)
  }
  if not found:
    raise CheckpointError(
        f'{root} holds no finished checkpoint (no step directory): has the'
        ' training run saved one yet (checkpoint.every, or at its last'
        ' update)?'
    )
  steps = sorted(found)
  if step == LATEST:
    step = steps[-1]
  elif step not in found:
    raise CheckpointError(
        f'{root} has no checkpoint of step {step}; it has steps {steps}'
        f' (or use {LATEST} for the latest)'
    )
  step_dir = found[step]
  if not paths.path(step_dir).joinpath(STATE_ITEM).is_dir():
    raise CheckpointError(
        f'{step_dir} has no {STATE_ITEM!r} item: not a checkpoint of'
        ' search_agent.train (e.g. converted HF weights: use params_path)'
    )
  return step_dir, step


def saved_param_shapes(step_dir: str) -> dict[str, tuple[int, ...]]:
  """'a/b/c' -> shape of every parameter saved in a step directory."""
  meta = ocp.PyTreeCheckpointer().metadata(paths.path(step_dir) / STATE_ITEM)
  meta = getattr(meta, 'item_metadata', meta)
  tree = getattr(meta, 'tree', meta)
  if not isinstance(tree, dict) or PARAMS_KEY not in tree:
    raise CheckpointError(
        f'{step_dir}/{STATE_ITEM} holds no {PARAMS_KEY!r} subtree: not a'
        ' checkpoint of search_agent.train'
    )
  return _flat_shapes(tree[PARAMS_KEY])


def check_compatible(saved: dict[str, tuple[int, ...]], like: Any) -> None:
  """Raises CheckpointMismatchError unless `like` has the saved parameters."""
  want = _flat_shapes(like)
  missing = sorted(set(want) - set(saved))
  extra = sorted(set(saved) - set(want))
  shapes = [
      f'{k}: checkpoint {saved[k]}, model {want[k]}'
      for k in sorted(set(want) & set(saved))
      if tuple(saved[k]) != tuple(want[k])
  ]
  if not (missing or extra or shapes):
    return
  parts = []
  for label, items in (
      ('shape differs', shapes),
      ('not in the checkpoint', missing),
      ('not in the model', extra),
  ):
    if items:
      shown = ', '.join(items[:_SHOWN])
      more = f' (+{len(items) - _SHOWN} more)' if len(items) > _SHOWN else ''
      parts.append(f'{len(items)} {label}: {shown}{more}')
  raise CheckpointMismatchError(
      'the checkpoint was trained for another model shape than the one'
      ' configured here; configure the model (preset, dims, vocab_size) the'
      ' training run used. ' + '; '.join(parts)
  )


def restore_params(
    path: str | os.PathLike[str], like: Any, step: int = LATEST
) -> tuple[Any, int]:
  """Restores the params of `step` (LATEST = newest) under `path`.

  Args:
    path: A training workdir or its checkpoints/ directory.
    like: The target parameter tree: arrays or jax.ShapeDtypeStruct with a
      sharding; the result has its structure, dtypes and shardings.
    step: The update step to restore.

  Returns:
    (params, step restored).

  Raises:
    CheckpointError: See `resolve_step`.
    CheckpointMismatchError: The saved parameters are not `like`'s.
  """
  step_dir, step = resolve_step(path, step)
  check_compatible(saved_param_shapes(step_dir), like)
  item = {PARAMS_KEY: jax.tree.map(_abstract, like)}
  out = ocp.PyTreeCheckpointer().restore(
      paths.path(step_dir) / STATE_ITEM,
      args=ocp.args.PyTreeRestore(
          item=item,
          restore_args=ocp.checkpoint_utils.construct_restore_args(item),
          partial_restore=True,
      ),
  )
  return out[PARAMS_KEY], step


def _abstract(x) -> jax.ShapeDtypeStruct:
  sharding = getattr(x, 'sharding', None)
  if sharding is None:
    raise CheckpointError(
        'restore_params needs a target with shardings (arrays, or'
        ' jax.ShapeDtypeStruct(..., sharding=...))'
    )
  return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)


def _flat_shapes(tree: Any) -> dict[str, tuple[int, ...]]:
  leaves = jax.tree_util.tree_flatten_with_path(
      tree, is_leaf=lambda x: hasattr(x, 'shape')
  )[0]
  return {
      '/'.join(str(getattr(k, 'key', k)) for k in path): tuple(leaf.shape)
      for path, leaf in leaves
  }
