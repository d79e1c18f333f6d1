"""The learner's view of the MaxText policy: token-aligned logprobs.

`make_logprob_fn(model)` maps (params, tokens_bt, valid_bt, routing_btlk) to
log pi_theta(token_t | tokens_<t) at every position t (position 0: 0.0), the
layout of `loss.LossBatch`. The recorded routing of the sampler is replayed
(MaxText's forced routed experts), so the learner scores each token through
the experts that generated it; the router itself is frozen by the optimizer
(ModelConfig.freeze_router). Call the function under `model.rules()`.

`temperature` is the rollouts' sampling temperature: the sampler records
log softmax(logits / T) of each drawn token, so the learner scores under the
same distribution (importance ratios, IcePop and the step-0 parity compare
like with like); T <= 0 (greedy) and 1 score the raw model.
"""

import jax
import jax.numpy as jnp

from search_agent.model import logprobs
from search_agent.model import maxtext_model


def make_logprob_fn(model: maxtext_model.Model, temperature: float = 1.0):
  """The `learner.LogprobFn` of a built MaxText model."""

  def fn(params, tokens_bt, valid_bt=None, routing_btlk=None):
    b, t = tokens_bt.shape
    inputs = tokens_bt[:, :-1]
    positions = jnp.broadcast_to(jnp.arange(t - 1), (b, t - 1))
    if valid_bt is None:
      segments = jnp.ones_like(inputs)
    else:
      segments = valid_bt[:, :-1].astype(jnp.int32)
    forced = None if routing_btlk is None else routing_btlk[:, :-1]
    lp, _ = logprobs.token_logprobs(
        model,
        params,
        inputs,
        positions,
        segments,
        tokens_bt[:, 1:],
        forced,
        temperature=temperature,
    )
    return jnp.pad(lp, ((0, 0), (1, 0)))

  return fn


def jitted_logprobs(model: maxtext_model.Model, temperature: float = 1.0):
  """Forward-only logprobs under the model's rules (for the parity check)."""
  fn = jax.jit(make_logprob_fn(model, temperature))

  def call(params, tokens_bt, valid_bt=None, routing_btlk=None):
    with model.rules():
      return fn(params, tokens_bt, valid_bt, routing_btlk)

  return call
