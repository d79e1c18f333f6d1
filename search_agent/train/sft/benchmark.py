"""SFT step benchmark: our update vs MaxText's `train.main`, same config.

  XLA_FLAGS='--xla_force_host_platform_device_count=8
    --xla_cpu_enable_concurrency_optimized_scheduler=false' JAX_PLATFORMS=cpu \
  python -m search_agent.train.sft.benchmark --seq_len=2048 --steps=3 \
      --layout=cpu8_ep_tp_cp --workdir=/tmp/bench

(On 8 simulated CPU devices sharing 2 cores, XLA:CPU's concurrency-optimized
scheduler can deadlock the collectives; the flag above avoids it.)

Both run the tiny MoE with the same layout, rows per step (one per device),
AdamW, and full remat; ours additionally with Muon. Reported: seconds per
step (mean wall time over the steps after compilation: ours block on every
step; MaxText's per-step times are dispatch-to-dispatch, so its mean over
steps 2.. is used), tokens per second, and our step time over MaxText's.
"""

import dataclasses
import json
import statistics
import time

from absl import app
from absl import flags
import jax
import numpy as np

from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.model import reference_train
from search_agent.train import optim
from search_agent.train.sft import step as step_lib

_SEQ = flags.DEFINE_integer('seq_len', 2048, 'Tokens per row.')
_STEPS = flags.DEFINE_integer('steps', 5, 'Timed steps (after 1 warmup).')
_LAYOUT = flags.DEFINE_string('layout', 'fsdp', 'Layout preset.')
_WORKDIR = flags.DEFINE_string('workdir', '/tmp/sft_bench', 'Scratch dir.')


def _batch(rows, seq, vocab):
  rng = np.random.default_rng(0)
  shape = (1, rows, seq)
  return {
      'inputs': rng.integers(0, vocab, shape).astype(np.int32),
      'targets': rng.integers(0, vocab, shape).astype(np.int32),
      'positions': np.broadcast_to(np.arange(seq), shape).astype(np.int32),
      'segment_ids': np.ones(shape, np.int32),
      'loss_mask': np.ones(shape, np.int32),
  }


def time_ours(cfg, layout, opt_name: str, steps: int) -> list[float]:
  model = maxtext_model.build(cfg, layout)
  tx = optim.make_optimizer(
      optim.OptimizerConfig(name=opt_name, weight_decay=0.0),
      1e-4,
      model.params,
      model.logical_axes,
  )
  params = model.params
  opt_state = step_lib.init_opt_state(model, tx, params)
  step = step_lib.make_train_step(model, tx)
  batch = jax.device_put(
      _batch(jax.device_count(), cfg.max_target_length, cfg.vocab_size),
      step_lib.batch_sharding(model),
  )
  times = []
  for _ in range(steps + 1):
    t0 = time.perf_counter()
    params, opt_state, m = step(params, opt_state, batch)
    jax.block_until_ready(m)
    times.append(time.perf_counter() - t0)
  return times[1:]


def main(argv):
  del argv
  cfg = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=_SEQ.value
  )
  layout = families.layout_preset(_LAYOUT.value)
  tokens = jax.device_count() * _SEQ.value
  report = {
      'devices': jax.device_count(),
      'layout': _LAYOUT.value,
      'tokens_per_step': tokens,
  }
  for name in ('adamw', 'muon'):
    t = statistics.mean(time_ours(cfg, layout, name, _STEPS.value))
    report[f'ours_{name}_s'] = t
    report[f'ours_{name}_tokens_per_s'] = tokens / t
  rows = reference_train.run_maxtext_train(
      cfg, layout, _WORKDIR.value, steps=_STEPS.value + 2
  )
  # MaxText times a step from one dispatch to the next (asynchronously),
  # so single steps swing both ways; the mean over steps 2.. is wall time.
  theirs = statistics.mean(
      r['perf/step_time_seconds'] for r in rows if r['step'] >= 2
  )
  report['maxtext_adamw_s'] = theirs
  report['maxtext_tokens_per_s'] = tokens / theirs
  report['ratio_ours_over_maxtext'] = report['ours_adamw_s'] / theirs
  print(json.dumps(report, indent=1))


if __name__ == '__main__':
  app.run(main)
