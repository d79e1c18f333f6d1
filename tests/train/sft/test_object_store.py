"""gs:// workdirs against a real GCS API: a local emulator the tests start.

`gcp-storage-emulator` (via gcs_emulator_main.py) serves the GCS JSON API on
a local port from a data directory (so its objects outlive the processes that wrote them); gcsfs
(epath's gs:// backend) and tensorstore (orbax's arrays) are pointed at it
with STORAGE_EMULATOR_HOST / TENSORSTORE_GCS_HTTP_URL. Objects there have
GCS semantics: no append ('a' silently overwrites), rename is copy+delete.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import types
import urllib.request

import jax.numpy as jnp
import numpy as np
import pytest

from search_agent import paths
from search_agent.model import checkpoint_params
from search_agent.search import service
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train.rl import replay_queue
from search_agent.train.sft import metrics as metrics_lib

BUCKET = 'search-agent-test'
# The emulator, plus the x-goog-generation headers that tensorstore needs.
EMULATOR = os.path.join(os.path.dirname(__file__), 'gcs_emulator_main.py')


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@pytest.fixture(scope='module')
def gcs(tmp_path_factory):
  """Starts the emulator; yields the env that points clients at it."""
  port = _free_port()
  url = f'http://127.0.0.1:{port}'
  data = tmp_path_factory.mktemp('gcs-data')
  proc = subprocess.Popen(
      [sys.executable, EMULATOR, '-d', str(data), 'start',
       '--port', str(port), '--default-bucket', BUCKET, '-q'],
      stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL,
  )  # fmt: skip
  end = time.monotonic() + 60
  while True:
    try:
      urllib.request.urlopen(f'{url}/storage/v1/b/{BUCKET}', timeout=2)
      break
    except OSError:
      assert proc.poll() is None, 'the GCS emulator exited'
      assert time.monotonic() < end, 'the GCS emulator did not start'
      time.sleep(0.2)
  env = {
      'STORAGE_EMULATOR_HOST': url,
      'TENSORSTORE_GCS_HTTP_URL': url,
      'GOOGLE_AUTH_TOKEN_FOR_TESTING': 'emulator',
      # The emulator has no storage-layout (HNS) API: plain GCS client.
      'GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT': 'false',
  }
  saved = {k: os.environ.get(k) for k in env}
  os.environ.update(env)
  yield env
  for k, v in saved.items():
    if v is None:
      os.environ.pop(k, None)
    else:
      os.environ[k] = v
  proc.send_signal(signal.SIGTERM)
  proc.wait(timeout=30)


def _uri(name: str) -> str:
  return f'gs://{BUCKET}/{name}'


def test_path_keeps_uris_and_absolutizes_local(tmp_path, monkeypatch):
  assert os.fspath(paths.path('gs://b/x/y')) == 'gs://b/x/y'
  assert paths.join('gs://b/run', 'index') == 'gs://b/run/index'
  monkeypatch.chdir(tmp_path)
  assert os.fspath(paths.path('rel')) == str(tmp_path / 'rel')
  assert paths.is_local('rel') and not paths.is_local('gs://b/x')


def test_write_atomic_local_leaves_no_temporary(tmp_path):
  target = tmp_path / 'a' / 'f.json'
  paths.write_atomic(target, 'one')
  paths.write_atomic(target, 'two')
  assert target.read_text() == 'two'
  assert os.listdir(target.parent) == ['f.json']


def test_write_atomic_and_read_on_gcs(gcs):
  del gcs
  uri = _uri('atomic/f.txt')
  paths.write_atomic(uri, 'one')
  paths.write_atomic(uri, b'two')
  assert paths.read_text(uri) == 'two'
  assert [p.name for p in paths.path(_uri('atomic')).iterdir()] == ['f.txt']
  # The emulator is a real object store: 'a' does not append.
  with pytest.warns(UserWarning, match='Append mode'):
    with paths.path(uri).open('a') as f:
      f.write('x')
  assert paths.read_text(uri) == 'x'


def test_metrics_on_gcs_rewrite_and_roll_back(gcs):
  del gcs
  workdir = _uri('metrics-run')
  w = metrics_lib.MetricsWriter(workdir, total_steps=4)
  for step in (1, 2, 3):
    w.write(step, 'train', {'nll': float(step)})
  w.close()
  path = paths.join(workdir, 'metrics.jsonl')
  assert [r['step'] for r in metrics_lib.read_metrics(path)] == [1, 2, 3]
  assert list(paths.path(paths.join(workdir, 'tb')).iterdir())
  # Resume from update 2: step 3 is dropped, then written once again.
  w = metrics_lib.MetricsWriter(workdir, total_steps=4, resume_step=2)
  w.write(3, 'train', {'nll': 30.0})
  w.close()
  rows = metrics_lib.read_metrics(path)
  assert [(r['step'], r['nll']) for r in rows] == [(1, 1), (2, 2), (3, 30)]


def test_data_reader_seeks_on_gcs(gcs, sft_jsonl):
  del gcs
  uri = _uri('data/train.jsonl')
  with open(sft_jsonl, 'rb') as f:
    paths.write_atomic(uri, f.read())
  local = data_lib.JsonlTrajectories(sft_jsonl, (0, 5))
  remote = data_lib.JsonlTrajectories(uri, (0, 5))
  assert len(remote) == len(local) == 5
  assert remote[3] == local[3]


def test_checkpointer_saves_and_restores_on_gcs(gcs):
  del gcs
  state = {'params': {'w': jnp.arange(8.0)}, 'opt': jnp.ones(3)}
  cfg = checkpoint_lib.CheckpointConfig(every=1, keep=2)
  ckpt = checkpoint_lib.Checkpointer(_uri('ckpt-run/checkpoints'), cfg)
  for step in (1, 2, 3):
    ckpt.save(step, jax_add(state, step), {'position': step})
  ckpt.close()
  ckpt = checkpoint_lib.Checkpointer(_uri('ckpt-run/checkpoints'), cfg)
  assert ckpt.latest_step() == 3
  got, data = ckpt.restore(3, state)
  assert data == {'position': 3}
  np.testing.assert_array_equal(got['params']['w'], np.arange(8.0) + 3)
  params = ckpt.restore_params(3, state['params'])
  np.testing.assert_array_equal(params['w'], np.arange(8.0) + 3)
  ckpt.close()
  steps = [p.name for p in paths.path(_uri('ckpt-run/checkpoints')).iterdir()]
  assert sorted(s for s in steps if s.isdigit()) == ['2', '3']  # keep=2
  # What eval and RL init read: the workdir's latest finished step.
  step_dir, step = checkpoint_params.resolve_step(_uri('ckpt-run'))
  assert (step_dir, step) == (_uri('ckpt-run/checkpoints/3'), 3)
  shapes = checkpoint_params.saved_param_shapes(step_dir)
  assert shapes == {'w': (8,)}


def jax_add(state, k):
  return {'params': {'w': state['params']['w'] + k}, 'opt': state['opt']}


def test_replay_queue_refuses_object_store():
  with pytest.raises(paths.NotLocalError, match='hard link'):
    replay_queue.ReplayQueue('gs://b/run/queue')


def test_tantivy_index_on_object_store_is_refused_not_mangled():
  c = types.SimpleNamespace(
      backend='tantivy', index_dir='', blocked_patterns=()
  )
  with pytest.raises(paths.NotLocalError, match='gs://b/run/index'):
    service.open_engine(c, 'gs://b/run')


WORKER = os.path.join(os.path.dirname(__file__), 'sft_kill_worker.py')


def _sft(repo_root, workdir, sft_jsonl, tokenizer_dir, env, log, kill_dir):
  cmd = [
      sys.executable,
      WORKER,
      f'--config={repo_root}/tpu_configs/sft.py:tiny',
      f'--workdir={workdir}',
      '--config.total_updates=6',
      '--config.schedule.total_steps=6',
      '--config.checkpoint.every=2',
      '--config.eval_every=2',
      f'--config.data.train_path={sft_jsonl}',
      f'--config.data.val_path={sft_jsonl}',
      '--config.data.format=trajectory',
      '--config.data.train_lines=(0, 20)',
      '--config.data.val_lines=(20, 22)',
      '--config.data.seq_len=512',
      '--config.model.max_target_length=512',
      '--config.model.logits_chunk=128',
      f'--config.tokenizer_path={tokenizer_dir}',
  ]
  full_env = dict(os.environ, PYTHONPATH=str(repo_root), JAX_PLATFORMS='cpu')
  full_env['XLA_FLAGS'] = '--xla_force_host_platform_device_count=1'
  full_env.update(env, SFT_KILL_POINTS='before_save:4', SFT_KILL_DIR=kill_dir)
  return subprocess.Popen(
      cmd,
      cwd=repo_root,
      env=full_env,
      stdout=subprocess.DEVNULL,
      stderr=open(log, 'w', encoding='utf-8'),  # pylint: disable=consider-using-with
  )


@pytest.mark.slow
@pytest.mark.maxtext
def test_sft_on_gcs_killed_and_restarted_resumes(
    gcs, tmp_path, repo_root, sft_jsonl, tiny_tokenizer_dir
):
  """The real SFT binary on a gs:// workdir: SIGKILL after update 4's
  metrics (checkpoint 2 published, 4 not); the same command resumes from
  checkpoint 2 and finishes with each update's metrics listed once."""
  workdir = _uri('sft-run')
  data = _uri('sft-data/train.jsonl')
  with open(sft_jsonl, 'rb') as f:
    paths.write_atomic(data, f.read())
  args = (repo_root, workdir, data, tiny_tokenizer_dir, gcs)
  marker = tmp_path / 'paused-before_save'
  proc = _sft(*args, tmp_path / 'run1.log', str(tmp_path))
  end = time.monotonic() + 600
  while not marker.exists():
    assert proc.poll() is None, (tmp_path / 'run1.log').read_text()[-3000:]
    assert time.monotonic() < end, 'update 4 never reached'
    time.sleep(0.1)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait(timeout=60) == -signal.SIGKILL
  ckpts = paths.path(paths.join(workdir, 'checkpoints'))
  assert sorted(p.name for p in ckpts.iterdir() if p.name.isdigit()) == ['2']
  metrics = paths.join(workdir, 'metrics.jsonl')
  assert [r['step'] for r in metrics_lib.read_metrics(metrics)] == [1, 2, 3, 4]

  log = tmp_path / 'run2.log'
  proc = _sft(*args, log, str(tmp_path))
  assert proc.wait(timeout=600) == 0, log.read_text()[-3000:]
  assert 'resumed from update 2' in log.read_text()
  rows = metrics_lib.read_metrics(metrics)
  assert [r['step'] for r in rows] == list(range(1, 7))
  assert [r['step'] for r in metrics_lib.read_metrics(metrics, 'val')] == [
      2,
      4,
      6,
  ]
  assert len(metrics_lib.read_metrics(metrics, 'data')) == 1
  assert json.loads(paths.read_text(paths.join(workdir, 'data_report.json')))
  steps = sorted(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
  assert steps[-1] == 6
  assert all(np.isfinite(r['nll']) for r in rows)
