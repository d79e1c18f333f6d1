"""Jitted SFT train and eval steps with gradient accumulation.

An update holds `micro_steps` microbatches ([M, b, T] arrays). The denominator
of the seed's loss (eligible tokens of the whole update) is counted first;
each microbatch then adds the gradient of `nll_sum_j / total` (plus its share
of the optional MoE load-balance loss) to a running sum inside a `lax.scan`,
so the accumulated gradient equals the full-update gradient.
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax

from search_agent import distributed
from search_agent.model import logprobs
from search_agent.model import maxtext_model
from search_agent.train.sft import loss as loss_lib

Batch = dict[str, jax.Array]


def _scored_logprobs(model, params, mb):
  """(log-probs, their loss mask, forward out) of one microbatch.

  Where the batch carries `score_index` (`data.score_index`), only those
  positions are scored and the mask is gathered with them; the sum over
  supervised positions is the same.
  """
  index = mb.get('score_index')
  lp, out = logprobs.token_logprobs(
      model,
      params,
      mb['inputs'],
      mb['positions'],
      mb['segment_ids'],
      mb['targets'],
      score_index_bs=index,
  )
  mask = mb['loss_mask']
  if index is not None:
    mask = jnp.take_along_axis(mask, index, axis=-1)
  return lp, mask, out


def _microbatch_loss(model, lb_weight, micro_steps, total):
  def fn(params, mb):
    lp, mask, out = _scored_logprobs(model, params, mb)
    nll = loss_lib.masked_nll_sum(lp, mask)
    loss = nll / total + lb_weight * out.lb_loss / micro_steps
    return loss, (nll, out.lb_loss)

  return fn


def accumulate_grads(
    model: maxtext_model.Model, params: Any, batch: Batch, lb_weight: float
) -> tuple[Any, dict[str, jax.Array]]:
  """Gradient of the update's loss, summed over microbatches."""
  micro_steps = batch['inputs'].shape[0]
  total = jnp.maximum(loss_lib.eligible_tokens(batch['loss_mask']), 1.0)
  grad_fn = jax.value_and_grad(
      _microbatch_loss(model, lb_weight, micro_steps, total), has_aux=True
  )

  def body(carry, mb):
    g_acc, nll_acc, lb_acc = carry
    (_, (nll, lb)), g = grad_fn(params, mb)
    g_acc = jax.tree.map(jnp.add, g_acc, g)
    return (g_acc, nll_acc + nll, lb_acc + lb), None

  zeros = jax.tree.map(jnp.zeros_like, params)
  zero = jnp.zeros((), jnp.float32)
  (grads, nll, lb), _ = jax.lax.scan(body, (zeros, zero, zero), batch)
  metrics = {
      'nll': nll / total,
      'tokens': total,
      'lb_loss': lb / micro_steps,
      'packed_tokens': jnp.sum(batch['segment_ids'] > 0, dtype=jnp.float32),
  }
  return grads, metrics


def make_train_step(
    model: maxtext_model.Model,
    tx: optax.GradientTransformation,
    lb_weight: float = 0.0,
) -> Callable:
  """(params, opt_state, batch) -> (params, opt_state, metrics), jitted."""

  def step(params, opt_state, batch):
    grads, metrics = accumulate_grads(model, params, batch, lb_weight)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    metrics['grad_norm'] = optax.global_norm(grads)
    metrics['update_norm'] = optax.global_norm(updates)
    return params, opt_state, metrics

  return _under_rules(model, _pinned_jit(step))


def init_opt_state(
    model: maxtext_model.Model, tx: optax.GradientTransformation, params: Any
) -> Any:
  """Optimizer state, placed on the model's mesh like the parameters."""
  with model.rules():
    return jax.jit(tx.init)(params)


def make_eval_step(model: maxtext_model.Model) -> Callable:
  """(params, batch) -> (nll_sum, eligible tokens) over all microbatches."""

  def step(params, batch):
    def body(acc, mb):
      lp, mask, _ = _scored_logprobs(model, params, mb)
      return acc + loss_lib.masked_nll_sum(lp, mask), None

    nll, _ = jax.lax.scan(body, jnp.zeros((), jnp.float32), batch)
    return nll, loss_lib.eligible_tokens(batch['loss_mask'])

  return _under_rules(
      model, distributed.together(jax.jit(step), 'sft-eval-step')
  )


def _pinned_jit(step: Callable) -> Callable:
  """jit whose params/opt_state outputs keep their input shardings.

  Without pinning, XLA may pick other output shardings and the second call
  recompiles; pinned, every step after the first reuses one executable. It
  is compiled ahead of its first run on every process (`distributed.together`).
  """
  compiled = {}

  def call(params, opt_state, batch):
    if 'fn' not in compiled:
      shardings = jax.tree.map(lambda x: x.sharding, (params, opt_state))
      compiled['fn'] = distributed.together(
          jax.jit(
              step, donate_argnums=(0, 1), out_shardings=shardings + (None,)
          ),
          'sft-train-step',
      )
    return compiled['fn'](params, opt_state, batch)

  return call


def _under_rules(model: maxtext_model.Model, fn: Callable) -> Callable:
  """Calls (and traces) `fn` under the model's mesh and logical rules."""

  def call(*args):
    with model.rules():
      return fn(*args)

  return call


class BatchLayoutError(ValueError):
  """The batch does not divide over the mesh's batch axes."""


def check_batch(sharding: jax.sharding.NamedSharding, micro_batch: int) -> None:
  """Refuses a microbatch the batch axes of `sharding` cannot split evenly.

  Raises:
    BatchLayoutError: `micro_batch` is not a multiple of the product of the
      mesh axes that shard the batch (dim 1 of [M, b, T]).
  """
  axes = sharding.spec[1] or ()
  axes = (axes,) if isinstance(axes, str) else tuple(axes)
  sizes = {a: sharding.mesh.shape[a] for a in axes}
  ways = 1
  for n in sizes.values():
    ways *= n
  if micro_batch % ways:
    raise BatchLayoutError(
        f'data.micro_batch={micro_batch} does not split over the batch axes'
        f' {sizes} ({ways} ways): make micro_batch a multiple of {ways} (move'
        ' rows from micro_steps into micro_batch) or change the layout'
    )


def batch_sharding(model: maxtext_model.Model) -> jax.sharding.NamedSharding:
  """[M, b, T] batches: b over the batch axes, T over context."""
  rules = dict(model.mt_config.logical_axis_rules)
  spec = jax.sharding.PartitionSpec(
      None,
      tuple(rules['activation_batch']) or None,
      tuple(rules['activation_length']) or None,
  )
  return jax.sharding.NamedSharding(model.mesh, spec)
