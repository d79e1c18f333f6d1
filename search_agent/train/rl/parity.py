"""Step-0 parity: the learner's logprobs of the first groups vs sampling.

Before the first update the learner recomputes, routing replayed, the
logprob of every generated token of the first gradient chunk (every token
with a policy version, including those of invalid turns, which carry no
loss: a first chunk of all-invalid rollouts is still checked) and compares
it with the logprob the sampler recorded: max |delta| must stay under the
configured tolerance, the IcePop mask rate should be ~0, and the routing
record must not be all zeros (a capture that silently returns zeros is a
known failure of RL stacks). A failure stops the run with `ParityError`.
"""

import dataclasses
import json
import os
from typing import Any, Callable, Sequence

import numpy as np

from search_agent.train.rl import learner
from search_agent.train.rl import loss as loss_lib


class ParityError(RuntimeError):
  """Sampler and learner disagree before any update."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParityConfig:
  """Attributes:

  max_abs_logprob_diff: Largest allowed |logp_learner - logp_sampler|.
  require_routing: The routing record must exist and not be all zeros.
  """

  max_abs_logprob_diff: float = 0.05
  require_routing: bool = True


def measure(
    logprob_fn: Callable[..., Any],
    params: Any,
    microbatches: Sequence[learner.Microbatch],
    loss_cfg: loss_lib.PolicyLossConfig,
) -> dict[str, Any]:
  """Parity figures over the generated tokens of `microbatches`."""
  diffs, kept, n_tok, nonzero, routed = [], 0, 0, 0, True
  for mb in microbatches:
    lp = np.asarray(logprob_fn(params, mb.tokens_bt, **mb.extras))
    gen = mb.batch.versions_bt >= 0  # sampled, whether trained on or not
    d = np.abs(lp - mb.batch.gen_logprobs_bt)[gen]
    diffs.append(d)
    w = np.exp(lp - mb.batch.gen_logprobs_bt)[gen]
    kept += int(
        ((w >= loss_cfg.icepop_low) & (w <= loss_cfg.icepop_high)).sum()
    )
    n_tok += int(gen.sum())
    if mb.routing_btlk is None:
      routed = False
    else:
      valid = mb.valid_bt[..., None, None] > 0
      nonzero += int((mb.routing_btlk * valid != 0).sum())
  d = np.concatenate(diffs) if diffs else np.zeros(0)
  return {
      'tokens': n_tok,
      'max_abs_logprob_diff': float(d.max()) if d.size else 0.0,
      'mean_abs_logprob_diff': float(d.mean()) if d.size else 0.0,
      'icepop_mask_rate': 1.0 - kept / n_tok if n_tok else 0.0,
      'routing_recorded': routed,
      'routing_nonzero_entries': nonzero,
  }


def check(
    report: dict[str, Any], cfg: ParityConfig, path: str | os.PathLike[str]
) -> None:
  """Writes `report` (with the verdict) to `path`; raises on a mismatch."""
  problems = []
  if report['tokens'] == 0:
    problems.append('the first groups hold no generated tokens')
  if report['max_abs_logprob_diff'] > cfg.max_abs_logprob_diff:
    problems.append(
        f'max |logp_learner - logp_sampler| = '
        f'{report["max_abs_logprob_diff"]:.3g} > tolerance'
        f' {cfg.max_abs_logprob_diff} (same weights, routing replayed: check'
        ' the sampler and learner model configs, dtype and chat rendering)'
    )
  if cfg.require_routing and not report['routing_recorded']:
    problems.append('the rollouts carry no routing record')
  elif cfg.require_routing and report['routing_nonzero_entries'] == 0:
    problems.append('the routing record is all zeros (capture is broken)')
  out = dict(report, tolerance=cfg.max_abs_logprob_diff, ok=not problems,
             problems=problems)  # fmt: skip
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(out, f, indent=1)
  if problems:
    raise ParityError('step-0 parity failed: ' + '; '.join(problems))


def passed(path: str | os.PathLike[str]) -> bool:
  """Whether `path` records a check that passed (False when absent or
  unreadable, e.g. cut short by a crash: the check then runs again)."""
  try:
    with open(path, encoding='utf-8') as f:
      return json.load(f).get('ok') is True
  except (FileNotFoundError, ValueError, AttributeError):
    return False
