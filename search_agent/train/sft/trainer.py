"""The SFT loop: data -> jitted update -> metrics, validation, checkpoints.

Resume: if the workdir holds a checkpoint, training continues from it (train
state and data-iterator position), so a killed run re-launched with the same
config reproduces the uninterrupted loss curve.

Several processes (a pod's hosts, `search_agent.distributed`): every process
runs the same jitted steps on one global mesh and loads only the rows its
devices hold (`host_batch`, `data.shards`); process 0 alone writes
metrics.jsonl, TensorBoard and the data report; checkpoints are collective.
"""

import dataclasses
import json
import time
from typing import Callable

from absl import logging
import jax

from search_agent import distributed
from search_agent import paths
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.model import config as model_config_lib
from search_agent.model import hf_import
from search_agent.model import maxtext_model
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import host_batch
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import coverage
from search_agent.train.sft import flops
from search_agent.train.sft import inputs as inputs_lib
from search_agent.train.sft import metrics as metrics_lib
from search_agent.train.sft import step as step_lib

load_or_train_tokenizer = inputs_lib.load_or_train_tokenizer


def make_render(cfg: sft_config.SFTConfig, workdir: str) -> data_lib.RenderFn:
  """The run's trajectory -> [(token_ids, loss_mask)] function (SFT mode)."""
  return inputs_lib.Inputs(cfg, workdir).render


class _Run:
  """The pieces of one run, built once."""

  def __init__(self, cfg: sft_config.SFTConfig, workdir: str, devices=None):
    self.inputs = inputs_lib.Inputs(cfg, workdir)
    self.model = maxtext_model.build(cfg.model, cfg.layout, devices=devices)
    if cfg.model.load_parameters_path:
      self.model = dataclasses.replace(
          self.model,
          params=hf_import.load_params(
              self.model, cfg.model.load_parameters_path
          ),
      )
    opt_cfg = cfg.optimizer
    if cfg.model.freeze_router:
      opt_cfg = dataclasses.replace(
          opt_cfg,
          frozen=opt_cfg.frozen + (model_config_lib.ROUTER_PARAM_PATTERN,),
      )
    self.schedule = schedule_lib.make_schedule(cfg.schedule)
    self.tx = optim.make_optimizer(
        opt_cfg,
        self.schedule,
        self.model.params,
        self.model.logical_axes,
    )
    self.step = step_lib.make_train_step(
        self.model, self.tx, cfg.model.load_balance_loss_weight
    )
    self.eval_step = step_lib.make_eval_step(self.model)
    self.sharding = step_lib.batch_sharding(self.model)
    d = cfg.data
    step_lib.check_batch(self.sharding, d.micro_batch)
    self.rows = host_batch.rows(
        self.sharding, (d.micro_steps, d.micro_batch, d.seq_len)
    )
    self.micro_batch = d.micro_batch
    self.multiple = d.loss_positions_multiple
    per_token = flops.flops_per_token(cfg.model, cfg.data.seq_len)
    self.flops_per_token = flops.train_flops(per_token, cfg.model.remat_policy)
    used = devices if devices is not None else jax.devices()
    self.peak_flops = flops.peak_flops(
        [d.device_kind for d in used], used[0].platform
    )


def validation_nll(run: _Run, params, cfg: sft_config.SFTConfig) -> float:
  """Token-mean NLL over the whole validation file."""
  del cfg
  return _mean_nll(run, params, run.inputs.validation())


def _mean_nll(run: _Run, params, batches) -> float:
  nll, count = 0.0, 0.0
  for batch in batches:
    batch = host_batch.from_whole(batch, run.sharding, run.multiple)
    n, c = run.eval_step(params, batch)
    nll, count = nll + float(n), count + float(c)
  return nll / max(count, 1.0)


def validation_metrics(run: _Run, params, cfg: sft_config.SFTConfig) -> dict:
  """{'nll'} over the validation file; pretraining adds 'copy_nll', the
  copy probe's NLL per repeated-name token (`pretrain_data`)."""
  out = {'nll': validation_nll(run, params, cfg)}
  probe = run.inputs.copy_probe()
  if probe is not None:
    out['copy_nll'] = _mean_nll(run, params, probe)
  return out


def _update(run: _Run, state: dict, batch: dict) -> tuple[dict, dict]:
  """One optimizer update from this process's rows; metrics as floats, with
  timing and tokens/s of the global batch."""
  t0 = time.perf_counter()
  batch = host_batch.to_global(
      batch, run.sharding, run.micro_batch, run.multiple
  )
  params, opt_state, m = run.step(state['params'], state['opt_state'], batch)
  m = {k: float(v) for k, v in jax.device_get(m).items()}
  dt = time.perf_counter() - t0
  m['step_time_s'] = dt
  m['tokens_per_s'] = m.pop('packed_tokens') / dt
  return {'params': params, 'opt_state': opt_state}, m


def _rates(run: _Run, step: int, tokens_per_s: float) -> dict[str, float]:
  """Learning rate of this update, model FLOP/s and MFU (FLOPs per token by
  `flops.train_flops`; MFU only where the devices' peak is known)."""
  out = {
      'learning_rate': float(run.schedule(step - 1)),
      'model_flops_per_s': tokens_per_s * run.flops_per_token,
  }
  if run.peak_flops:
    out['mfu'] = out['model_flops_per_s'] / run.peak_flops
  return out


def _report_data(cfg, run: _Run, workdir: str, writer) -> None:
  """data_report.json and the metrics `data` record (step 0), once a run."""
  if not distributed.is_writer() or paths.exists(
      paths.join(workdir, coverage.REPORT_FILE)
  ):
    return
  report = coverage.make_report(cfg, run.inputs.render)
  logging.info('data report:\n%s', coverage.format_report(report))
  record = coverage.metrics_record(report)
  if record and not metrics_lib.read_metrics(writer.path, 'data'):
    writer.write(0, 'data', record)
  coverage.write_report(workdir, report)


def check_init(cfg: sft_config.SFTConfig) -> None:
  """Refuses random initial weights unless `init='random'`.

  Raises:
    inputs_lib.InitError: Neither init_from nor model.load_parameters_path
      is set and init is not 'random'.
  """
  if cfg.init == 'random' or cfg.init_from or cfg.model.load_parameters_path:
    return
  raise inputs_lib.InitError(
      f'{cfg.model.model_name}: no starting weights (set'
      ' --config.model.load_parameters_path=<model.tools.import_hf output> or'
      ' --config.init_from=<pretrain workdir>); to train from random weights'
      ' on purpose pass --config.init=random'
  )


def train(
    cfg: sft_config.SFTConfig,
    workdir: str,
    on_update: Callable[[int, dict], None] | None = None,
    devices: list[jax.Device] | None = None,
) -> dict:
  """Runs (or resumes) SFT in `workdir`; returns the final state dict.

  Args:
    cfg: The run's configuration.
    workdir: Checkpoints, metrics.jsonl, TensorBoard and the tiny tokenizer.
    on_update: Called after every update with (step, metrics).
    devices: Devices of the mesh (default: all).

  Returns:
    {'params', 'opt_state'} after the last update.
  """
  check_init(cfg)
  run = _Run(cfg, workdir, devices)
  ckpt = checkpoint_lib.Checkpointer(
      paths.join(workdir, 'checkpoints'), cfg.checkpoint
  )
  state = {
      'params': run.model.params,
      'opt_state': step_lib.init_opt_state(run.model, run.tx, run.model.params),
  }
  it = run.inputs.train_updates(run.rows)
  start = ckpt.latest_step() or 0
  if start:
    state, data_state = ckpt.restore(start, state)
    it.set_state(data_state)
    logging.info('resumed from update %d', start)
  elif cfg.init_from:
    params, init_step = inputs_lib.init_params(cfg.init_from, state['params'])
    state = {
        'params': params,
        'opt_state': step_lib.init_opt_state(run.model, run.tx, params),
    }
    logging.info('starting from %s update %d', cfg.init_from, init_step)
  writer = metrics_lib.make_writer(workdir, cfg.total_updates, start)
  _report_data(cfg, run, workdir, writer)
  for step in range(start + 1, cfg.total_updates + 1):
    try:
      batch = next(it)
    except StopIteration:
      logging.warning('data exhausted after %d updates', step - 1)
      if step - 1 > start and ckpt.latest_step() != step - 1:
        ckpt.save(step - 1, state, it.get_state())
      break
    state, m = _update(run, state, batch)
    m.update(_rates(run, step, m['tokens_per_s']))
    writer.write(step, 'train', m)
    if cfg.data.val_path and (
        step == cfg.total_updates
        or (cfg.eval_every and step % cfg.eval_every == 0)
    ):
      writer.write(step, 'val', validation_metrics(run, state['params'], cfg))
    if ckpt.should_save(step, cfg.total_updates):
      ckpt.save(step, state, it.get_state())
    if on_update is not None:
      on_update(step, m)
  ckpt.close()
  writer.close()
  return state
