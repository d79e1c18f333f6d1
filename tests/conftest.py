"""Test setup: 8 simulated CPU devices before JAX starts, shared paths."""

import os
import pathlib

# Must run before anything imports jax.
os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ['XLA_FLAGS'] = (
    os.environ.get('XLA_FLAGS', '')
    + ' --xla_force_host_platform_device_count=8'
).strip()
os.environ.setdefault('DECOUPLE_GCLOUD', 'TRUE')

import pytest  # pylint: disable=g-import-not-at-top

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / 'shared' / 'data'


@pytest.fixture(scope='session')
def repo_root() -> pathlib.Path:
  return REPO


@pytest.fixture(scope='session')
def shared_data() -> pathlib.Path:
  """../shared/data (real public data; see its README)."""
  if not SHARED_DATA.is_dir():
    pytest.fail(f'{SHARED_DATA} is missing: tests need the shared real data')
  return SHARED_DATA
