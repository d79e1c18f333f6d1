"""Test setup: 8 simulated CPU devices and a compilation cache before JAX
starts, shared paths."""

import atexit
import os
import pathlib
import shutil
import tempfile

# Must run before anything imports jax.
os.environ.setdefault('JAX_PLATFORMS', 'cpu')
os.environ['XLA_FLAGS'] = (
    os.environ.get('XLA_FLAGS', '')
    + ' --xla_force_host_platform_device_count=8'
).strip()
os.environ.setdefault('DECOUPLE_GCLOUD', 'TRUE')
# One persistent compilation cache for the session, inherited by the binaries
# tests start: the tiny model's steps compile once per shape, not once per
# test and subprocess. A fresh directory per session (unless one is set), so
# no run reads another's entries.
if 'JAX_COMPILATION_CACHE_DIR' not in os.environ:
  _CACHE = tempfile.mkdtemp(prefix='search-agent-jax-cache-')
  atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
  os.environ['JAX_COMPILATION_CACHE_DIR'] = _CACHE
  os.environ['JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS'] = '0'
  os.environ['JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES'] = '0'

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


@pytest.fixture(scope='session')
def tiny_index(tmp_path_factory):
  """The first 500 bundled 2Wiki documents, indexed once (~1 s)."""
  # pylint: disable=g-import-not-at-top
  from search_agent.corpus.sources import CorpusSpec
  from search_agent.search.tantivy_build import build_tantivy_index

  path = tmp_path_factory.mktemp('eval_index') / 'index'
  build_tantivy_index(CorpusSpec(max_docs=500), path)
  return path


def pytest_collection_modifyitems(items) -> None:
  """Files holding slow tests first, otherwise in collection order: with
  pytest-xdist's --dist loadfile (launch/run_tests.sh) the long files start
  early instead of ending the run on one worker while the other idles."""
  slow = {item.path for item in items if item.get_closest_marker('slow')}
  items.sort(key=lambda item: item.path not in slow)  # stable
