"""Shared tiny MoE models for tests/model (built once per session)."""

import os

# XLA:CPU's concurrency-optimized scheduler can deadlock collectives of 8
# simulated devices on 2 cores (threads blocked in different rendezvous);
# the sequential schedule avoids it. Set before the JAX backend starts.
_FLAG = '--xla_cpu_enable_concurrency_optimized_scheduler=false'
if _FLAG not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = (
      os.environ.get('XLA_FLAGS', '') + ' ' + _FLAG
  ).strip()


import dataclasses

import jax
import pytest

from search_agent.model import families
from search_agent.model import maxtext_model

# The tiny preset at a short length, so compiles stay fast on 2 cores.
TEST_CFG = dataclasses.replace(
    families.model_preset('tiny'), max_target_length=128, logits_chunk=32
)


@pytest.fixture(scope='session')
def tiny_cfg():
  return TEST_CFG


@pytest.fixture(scope='session')
def model1():
  """The tiny MoE on one device, recording its routing."""
  return maxtext_model.build(
      TEST_CFG,
      families.layout_preset('fsdp'),
      devices=jax.devices()[:1],
      record_routing=True,
  )


@pytest.fixture(scope='session')
def model8():
  """The tiny MoE on 8 devices: expert=2 x tensor=2 x context=2."""
  return maxtext_model.build(TEST_CFG, families.layout_preset('cpu8_ep_tp_cp'))
