"""MaxText's own trainer (`train.main`) on one of our model configs.

Used as the speed reference for our SFT step: the same model, layout, batch
and optimizer, on MaxText's synthetic data, timed by MaxText's own metrics
(`perf/step_time_seconds` in its metrics file).
"""

import json
import os
from typing import Any

import jax
from maxtext.trainers.pre_train import train as mt_train

from search_agent.model import config as config_lib
from search_agent.model import maxtext_model
from search_agent.model import mesh as mesh_lib


def run_maxtext_train(
    cfg: config_lib.ModelConfig,
    layout: mesh_lib.Parallelism,
    workdir: str,
    *,
    steps: int,
    per_device_batch_size: float = 1.0,
    optimizer: str = 'adamw',
) -> list[dict[str, Any]]:
  """Runs `steps` MaxText train steps; returns its per-step metrics rows."""
  os.makedirs(workdir, exist_ok=True)
  metrics_file = os.path.join(workdir, 'maxtext_metrics.jsonl')
  kw = config_lib.to_maxtext_kwargs(
      cfg,
      layout,
      jax.device_count(),
      per_device_batch_size=per_device_batch_size,
  )
  kw.pop('logical_axis_rules')  # the CLI cannot carry it; rules are ours
  kw.update(
      steps=steps,
      log_period=1,
      metrics_file=metrics_file,
      base_output_directory=workdir,
      opt_type=optimizer,
      learning_rate=1e-4,
  )
  argv = ['train', maxtext_model.BASE_YML] + [f'{k}={v}' for k, v in kw.items()]
  mt_train.main(argv)
  with open(metrics_file, encoding='utf-8') as f:
    return [json.loads(line) for line in f if line.strip()]
