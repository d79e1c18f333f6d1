"""Optimizers: Muon (the recipe's) and AdamW, with an optional frozen router.

Muon as the open recipe sets it: momentum 0.9, Nesterov off (SFT) / on (RL),
weight decay 0.1, "spectral scaling with multiplier 0.2". The last maps to
optax.contrib.muon's `consistent_rms=0.2`: every orthogonalized update is
scaled by sqrt(max(fan_in, fan_out)) * 0.2 (Moonlight's matched-RMS rule,
arXiv 2502.16982), the same rule as Megatron's Muon `scale_mode='spectral'`
with `extra_scale_factor=0.2`.

Muon needs to know which axes of each parameter are the matrix: we read it
from the parameters' logical axis names. Stacked `layers` and `exp` axes are
batch axes (each layer / expert is orthogonalized on its own); `embed*` names
are the model dimension. Embeddings, the LM head, the router and every
vector parameter (norm scales) go to AdamW, as usual for Muon.
"""

import dataclasses
import re
from typing import Any

import jax
import optax
from optax.contrib import muon
from optax.contrib import MuonDimensionNumbers

_BATCH_AXES = ('layers', 'exp', 'stage')


class OptimizerConfigError(ValueError):
  """An optimizer configuration is invalid."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class OptimizerConfig:
  """Optimizer config_lib.

  Attributes:
    name: 'muon' or 'adamw'.
    momentum: Muon momentum (beta); AdamW b1.
    nesterov: Nesterov momentum for Muon.
    weight_decay: Decoupled weight decay (multiplied by the learning rate).
    spectral_scale: Muon update scale multiplier (`consistent_rms`); 0 keeps
      optax's default width scaling.
    adam_b2: AdamW b2 (also for Muon's AdamW-handled parameters).
    adam_eps: AdamW epsilon.
    grad_clip_norm: Global-norm clipping before the optimizer; 0 disables.
    frozen: Regexes over '/'-joined parameter paths whose updates are zeroed
      (e.g. the router: 'gate/kernel$').
  """

  name: str = 'muon'
  momentum: float = 0.9
  nesterov: bool = False
  weight_decay: float = 0.1
  spectral_scale: float = 0.2
  adam_b2: float = 0.95
  adam_eps: float = 1e-8
  grad_clip_norm: float = 0.0
  frozen: tuple[str, ...] = ()


def muon_dims(logical_axes: tuple) -> MuonDimensionNumbers | None:
  """Muon reduction/output axes from logical names; None -> AdamW."""
  names = list(logical_axes)
  if any(n is None for n in names) or any('vocab' in str(n) for n in names):
    return None
  free = [i for i, n in enumerate(names) if n not in _BATCH_AXES]
  if len(free) < 2:
    return None
  if str(names[free[-1]]).startswith('embed'):
    return MuonDimensionNumbers(
        reduction_axis=tuple(free[:-1]), output_axis=(free[-1],)
    )
  return MuonDimensionNumbers(
      reduction_axis=(free[0],), output_axis=tuple(free[1:])
  )


def _path_str(path) -> str:
  return '/'.join(str(getattr(k, 'key', k)) for k in path)


def _tree_map_with_logical(fn, params, logical):
  return jax.tree.map(lambda _, names: fn(names), params, logical)


def make_optimizer(
    cfg: OptimizerConfig, schedule: Any, params: Any, logical_axes: Any
) -> optax.GradientTransformation:
  """The optimizer for `params` (a dict tree) with its logical axes."""
  if cfg.name == 'muon':
    dims = _tree_map_with_logical(muon_dims, params, logical_axes)
    tx = muon(
        learning_rate=schedule,
        beta=cfg.momentum,
        nesterov=cfg.nesterov,
        weight_decay=cfg.weight_decay,
        adam_b1=cfg.momentum,
        adam_b2=cfg.adam_b2,
        adam_weight_decay=cfg.weight_decay,
        muon_weight_dimension_numbers=dims,
        consistent_rms=cfg.spectral_scale or None,
    )
  elif cfg.name == 'adamw':
    tx = optax.adamw(
        schedule,
        b1=cfg.momentum,
        b2=cfg.adam_b2,
        eps=cfg.adam_eps,
        weight_decay=cfg.weight_decay,
    )
  else:
    raise OptimizerConfigError(
        f'optimizer {cfg.name!r} is unknown; use "muon" or "adamw"'
    )
  if cfg.grad_clip_norm > 0:
    tx = optax.chain(optax.clip_by_global_norm(cfg.grad_clip_norm), tx)
  if cfg.frozen:
    patterns = [re.compile(p) for p in cfg.frozen]
    labels = jax.tree_util.tree_map_with_path(
        lambda path, _: 'frozen'
        if any(p.search(_path_str(path)) for p in patterns)
        else 'train',
        params,
    )
    if 'frozen' not in jax.tree.leaves(labels):
      raise OptimizerConfigError(
          f'frozen patterns {cfg.frozen} match no parameter'
      )
    tx = optax.multi_transform(
        {'train': tx, 'frozen': optax.set_to_zero()}, labels
    )
  return tx
