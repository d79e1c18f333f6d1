"""SFT throughput benchmark: our update, before/after tuning, vs MaxText.

  XLA_FLAGS=--xla_force_host_platform_device_count=1 JAX_PLATFORMS=cpu \
  python -m search_agent.train.sft.benchmark --seq_len=2048 --rows=2 \
      --segment=420 --steps=3 --workdir=/tmp/bench

(the pipeline's SFT shape: two 2,048-token microbatches of ~420-token
demonstrations; `--seq_len=512 --rows=8 --segment=150` is pretrain_tiny's).
In one process, on the tiny MoE with Muon, an update of `rows` packed rows of
`seq_len` tokens (segments of `segment` tokens, the last `--supervised` share
of every 50-token run supervised: 0.13 as in the `:learn` demonstrations,
1.0 for pretraining):
  * `before`: one row per microbatch (`micro_steps=rows`), full remat,
    256-position logits chunks recomputed in the backward, MaxText's
    dot-product attention (the tiny SFT settings before the speed-ups);
  * `after`: the same microbatching with `--after_block`-position blocked
    attention (`ModelConfig.attention_block`: block pairs without a shared
    segment skipped), logits chunks of `--after_chunk` kept for the backward
    (`logits_remat=False`), remat `--after_remat`, and the head and loss
    only at supervised positions gathered to a multiple of
    `--after_loss_multiple` (the tiny configs' settings, tpu_configs/sft.py);
then, for a like-for-like check against MaxText's own `train.main` (one
microbatch of `rows` rows, AdamW), ours with the `after` settings in that
shape (`after_adamw`) and MaxText's (its own attention and logits). Reported:
seconds per update (median after compilation; MaxText's dispatch-to-dispatch
times, mean over steps 2..), tokens/s, CPU seconds per update (ours), model
training FLOPs per token (`flops.flops_per_token`, the formula in its
docstring; the same count for every variant, so FLOP/s ratios are tokens/s
ratios), achieved FLOP/s and its share of the CPUs' peak, and the
after/before and ours/MaxText ratios. Other load on the machine slows both
alike; compare within one run (CPU seconds move least).
"""

import dataclasses
import json
import resource
import statistics
import time

from absl import app
from absl import flags
import jax
import numpy as np

from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.model import reference_train
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train.sft import flops as flops_lib
from search_agent.train.sft import step as step_lib

_SEQ = flags.DEFINE_integer('seq_len', 2048, 'Tokens per row.')
_ROWS = flags.DEFINE_integer('rows', 2, 'Packed rows per update.')
_SEGMENT = flags.DEFINE_integer('segment', 420, 'Tokens per packed segment.')
_STEPS = flags.DEFINE_integer('steps', 3, 'Timed updates (after 1 warmup).')
_LAYOUT = flags.DEFINE_string('layout', 'fsdp', 'Layout preset.')
_REMAT = flags.DEFINE_string('after_remat', 'full', "'after' remat policy.")
_BLOCK = flags.DEFINE_integer('after_block', 128, "'after' attention block.")
_CHUNK = flags.DEFINE_integer('after_chunk', 256, "'after' logits chunk.")
_SUPERVISED = flags.DEFINE_float(
    'supervised',
    0.13,
    'Share of each segment supervised, as the last tokens of every 50-token'
    " run (turns); 0.13 is the :learn split's demonstrations (0.20 with its"
    ' rehearsal texts), 1.0 pretraining.',
)
_LOSS_MULTIPLE = flags.DEFINE_integer(
    'after_loss_multiple',
    128,
    "'after' scores only supervised positions, gathered to a multiple of this"
    ' (`DataConfig.loss_positions_multiple`; 0 = every position).',
)
_MAXTEXT = flags.DEFINE_bool('maxtext', True, "Also time MaxText's train.main.")
_WORKDIR = flags.DEFINE_string('workdir', '/tmp/sft_bench', 'Scratch dir.')


def make_batch(
    micro_steps, rows, seq, vocab, segment=420, supervised=1.0, loss_multiple=0
):
  """Random tokens in packed rows of `segment`-token segments.

  The last `supervised` share of every 50-token run of a segment carries the
  loss (all of it at 1.0); with `loss_multiple` the batch also carries
  `score_index` (`data.with_score_index`).
  """
  rng = np.random.default_rng(0)
  shape = (micro_steps, rows, seq)
  pos = np.arange(seq) % segment
  seg = np.arange(seq) // segment + 1
  mask = (pos % 50) >= 50 - round(50 * supervised)
  batch = {
      'inputs': rng.integers(0, vocab, shape).astype(np.int32),
      'targets': rng.integers(0, vocab, shape).astype(np.int32),
      'positions': np.broadcast_to(pos, shape).astype(np.int32),
      'segment_ids': np.broadcast_to(seg, shape).astype(np.int32),
      'loss_mask': np.broadcast_to(mask, shape).astype(np.int32),
  }
  return data_lib.with_score_index(batch, loss_multiple)


def _cpu_s() -> float:
  r = resource.getrusage(resource.RUSAGE_SELF)
  return r.ru_utime + r.ru_stime


def time_update(
    cfg,
    layout,
    micro_steps,
    rows,
    steps,
    opt='muon',
    segment=420,
    supervised=1.0,
    loss_multiple=0,
):
  """(wall, CPU) seconds per update (medians after one compiling update).

  CPU seconds (all of this process's threads) move less than wall time when
  other processes load the machine.
  """
  model = maxtext_model.build(cfg, layout)
  tx = optim.make_optimizer(
      optim.OptimizerConfig(name=opt, weight_decay=0.0),
      1e-4,
      model.params,
      model.logical_axes,
  )
  params = model.params
  opt_state = step_lib.init_opt_state(model, tx, params)
  step = step_lib.make_train_step(model, tx)
  batch = jax.device_put(
      make_batch(
          micro_steps,
          rows,
          cfg.max_target_length,
          cfg.vocab_size,
          segment,
          supervised,
          loss_multiple,
      ),
      step_lib.batch_sharding(model),
  )
  times, cpu = [], []
  for _ in range(steps + 1):
    t0, c0 = time.perf_counter(), _cpu_s()
    params, opt_state, m = step(params, opt_state, batch)
    jax.block_until_ready(m)
    times.append(time.perf_counter() - t0)
    cpu.append(_cpu_s() - c0)
  return statistics.median(times[1:]), statistics.median(cpu[1:])


def _figures(seconds, tokens, flops_per_token, peak, cpu_s=None):
  achieved = tokens * flops_per_token / seconds
  out = (
      {}
      if cpu_s is None
      else {
          'update_cpu_s': cpu_s,
          'tokens_per_cpu_s': tokens / cpu_s,
      }
  )
  return out | {
      'update_s': seconds,
      'tokens_per_s': tokens / seconds,
      'flops_per_token': flops_per_token,
      'achieved_gflops': achieved / 1e9,
      'share_of_peak': achieved / peak,
  }


def main(argv):
  del argv
  seq, rows, steps = _SEQ.value, _ROWS.value, _STEPS.value
  tiny = dataclasses.replace(
      families.model_preset('tiny'), max_target_length=seq
  )
  before = dataclasses.replace(tiny, remat_policy='full', logits_chunk=256)
  after = dataclasses.replace(
      before,
      remat_policy=_REMAT.value,
      attention_block=_BLOCK.value,
      logits_chunk=_CHUNK.value,
      logits_remat=False,
  )
  seg = _SEGMENT.value
  layout = families.layout_preset(_LAYOUT.value)
  tokens = rows * seq * jax.device_count()
  peak = flops_lib.cpu_peak_flops()
  fpt = flops_lib.flops_per_token(tiny, seq)
  remat_fpt = lambda c: flops_lib.train_flops(fpt, c.remat_policy)
  report = {
      'devices': jax.device_count(),
      'layout': _LAYOUT.value,
      'tokens_per_update': tokens,
      'peak_gflops': peak / 1e9,
      'flops_per_token': fpt,
      'segment': seg,
  }
  sup, multiple = _SUPERVISED.value, _LOSS_MULTIPLE.value
  report['supervised'] = sup
  report['after_loss_multiple'] = multiple
  t, c = time_update(
      before, layout, rows, 1, steps, segment=seg, supervised=sup
  )
  report['before'] = _figures(t, tokens, remat_fpt(before), peak, c)
  t, c = time_update(
      after,
      layout,
      rows,
      1,
      steps,
      segment=seg,
      supervised=sup,
      loss_multiple=multiple,
  )
  report['after'] = _figures(t, tokens, remat_fpt(after), peak, c)
  for k in ('tokens_per_s', 'tokens_per_cpu_s'):
    report[f'after_over_before_{k}'] = report['after'][k] / report['before'][k]
  if _MAXTEXT.value:
    t, c = time_update(after, layout, 1, rows, steps, opt='adamw', segment=seg)
    report['after_adamw'] = _figures(t, tokens, remat_fpt(after), peak, c)
    mt_rows = reference_train.run_maxtext_train(
        after,
        layout,
        _WORKDIR.value,
        steps=steps + 2,
        per_device_batch_size=rows,
    )
    theirs = statistics.mean(
        r['perf/step_time_seconds'] for r in mt_rows if r['step'] >= 2
    )
    report['maxtext_adamw'] = _figures(theirs, tokens, remat_fpt(after), peak)
    report['ours_adamw_over_maxtext_tokens_per_s'] = (
        report['after_adamw']['tokens_per_s']
        / report['maxtext_adamw']['tokens_per_s']
    )
  print(json.dumps(report, indent=1))


if __name__ == '__main__':
  app.run(main)
