"""The test process sees 8 simulated CPU devices and a compilation cache."""

import os
import pathlib

import jax
import jax.numpy as jnp


def test_eight_cpu_devices():
  assert jax.device_count() == 8
  assert {d.platform for d in jax.devices()} == {'cpu'}


def test_compilation_cache_is_the_sessions_own_and_filled():
  cache = pathlib.Path(os.environ['JAX_COMPILATION_CACHE_DIR'])
  assert jax.config.jax_compilation_cache_dir == str(cache)
  before = set(cache.iterdir())
  jax.jit(lambda x: x * 3 + 1)(jnp.arange(7919.0)).block_until_ready()
  assert set(cache.iterdir()) - before  # a shape no other test compiles
