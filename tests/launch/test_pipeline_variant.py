"""How the main job picks its variant from the devices JAX sees."""

import os
import stat
import subprocess
import sys

import pytest

from search_agent.pipeline import plan
from search_agent.pipeline import stages as stages_lib
from search_agent.pipeline import variant
from tpu_configs import pipeline as pipeline_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
GPU = variant.Devices(platform='gpu', device_kind='NVIDIA H100', count=1)
TPU = variant.Devices(platform='tpu', device_kind='TPU v5 lite', count=8)
CPU = variant.Devices(platform='cpu', device_kind='cpu', count=1)


def _fake_python(tmp_path, probe_output: str, code: int = 0) -> str:
  """An interpreter that answers the probe (`-c`) and runs nothing else."""
  path = tmp_path / 'python'
  path.write_text(
      '#!/bin/sh\n'
      f'if [ "$1" = "-c" ]; then echo \'{probe_output}\'; exit {code}; fi\n'
      'echo "ran $*"\n'
  )
  path.chmod(path.stat().st_mode | stat.S_IEXEC)
  return str(path)


@pytest.mark.parametrize(
    'devices, want',
    [(GPU, 'learn_accel'), (TPU, 'learn_accel'), (CPU, 'tiny')],
)
def test_accelerators_run_the_learning_variant_cpus_the_tiny_one(devices, want):
  choice = variant.choose(devices)
  assert choice.variant == want
  assert choice.device_kind == devices.device_kind
  assert devices.device_kind in choice.reason


def test_the_probe_reads_what_jax_prints_in_a_subprocess(tmp_path):
  python = _fake_python(
      tmp_path, '{"platform": "gpu", "device_kind": "NVIDIA H100", "count": 1}'
  )
  assert variant.probe(python) == GPU
  with pytest.raises(variant.ProbeError, match='exited with 3'):
    variant.probe(_fake_python(tmp_path, 'no jax', code=3))
  with pytest.raises(variant.ProbeError, match='printed'):
    variant.probe(_fake_python(tmp_path, 'not json'))


def test_the_config_without_a_variant_follows_the_devices(monkeypatch):
  monkeypatch.setattr(variant, 'probe', lambda python=None: GPU)
  for arg in (None, 'auto'):
    c = pipeline_config.get_config(arg)
    assert (c.variant, c.device_kind) == ('learn_accel', 'NVIDIA H100')
    assert 'NVIDIA H100' in c.variant_reason
  monkeypatch.setattr(variant, 'probe', lambda python=None: CPU)
  assert pipeline_config.get_config().variant == 'tiny'
  # A named variant wins; the driver asks for the devices later.
  c = pipeline_config.get_config('learn')
  assert (c.variant, c.device_kind) == ('learn', '')
  assert c.variant_reason == 'named on the command line (:learn)'
  with pytest.raises(ValueError, match='tiny, learn, learn_accel or auto'):
    pipeline_config.get_config('huge')


def test_learn_accel_is_learn_with_a_shorter_rl_and_no_rl_seen():
  learn = pipeline_config.get_config('learn')
  accel = pipeline_config.get_config('learn_accel')
  assert (accel.rl.updates, learn.rl.updates) == (60, 120)
  assert not accel.rl_seen.enabled and learn.rl_seen.enabled
  names = [s.name for s in plan.build(accel)]
  assert names == list(pipeline_config.STAGES)
  # Every stage before RL is learn's, so a learn run's stages are reused.
  hashes = {}
  for c in (learn, accel):
    h = {}
    for s in plan.build(c):
      h[s.name] = stages_lib.stage_hash(s, h)
    hashes[c.variant] = h
  for name in names[: names.index('rl')]:
    assert hashes['learn'][name] == hashes['learn_accel'][name], name
  assert hashes['learn']['rl'] != hashes['learn_accel']['rl']


def test_the_report_stage_records_the_variant_and_why():
  c = pipeline_config.get_config('learn_accel')
  c.device_kind = 'NVIDIA H100'
  report = plan.build(c)[-1]
  assert report.flags['variant'] == 'learn_accel'
  assert report.flags['device_kind'] == 'NVIDIA H100'
  assert report.flags['variant_reason'] == c.variant_reason


def test_help_names_how_the_variant_is_chosen():
  out = subprocess.run(
      [sys.executable, '-m', 'launch.pipeline', '--help'],
      cwd=ROOT,
      capture_output=True,
      text=True,
      check=False,
  ).stdout  # fmt: skip  (absl's --help exits 1)
  assert 'How the variant is chosen' in out
  assert 'GPU or TPU' in out and 'learn_accel' in out and 'CPU' in out


def test_the_first_console_line_says_which_variant_and_why(tmp_path):
  python = _fake_python(
      tmp_path, '{"platform": "cpu", "device_kind": "cpu", "count": 1}'
  )
  out = subprocess.run(
      [sys.executable, '-m', 'launch.pipeline',
       '--config=tpu_configs/pipeline.py:tiny', f'--workdir={tmp_path}/run',
       f'--config.python={python}', "--config.stages=('tokenizer',)"],
      cwd=ROOT, capture_output=True, text=True, check=True,
  ).stdout  # fmt: skip
  first = out.splitlines()[0]
  assert first == 'pipeline tiny on cpu: named on the command line (:tiny)'


def test_run_main_passes_the_variant_flag_as_the_config_variant(tmp_path):
  """run_main.sh with a stub setup and interpreter: what it executes."""
  (tmp_path / 'launch').mkdir()
  script = os.path.join(ROOT, 'launch', 'run_main.sh')
  (tmp_path / 'launch' / 'run_main.sh').write_text(open(script).read())
  (tmp_path / 'launch' / 'setup.sh').write_text('exit 0\n')
  (tmp_path / '.venv' / 'bin').mkdir(parents=True)
  python = tmp_path / '.venv' / 'bin' / 'python'
  python.write_text('#!/bin/sh\necho "$@"\n')
  python.chmod(0o755)

  def run(*args):
    return subprocess.run(
        ['bash', str(tmp_path / 'launch' / 'run_main.sh'), *args],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip

  auto = run()
  assert '--config=tpu_configs/pipeline.py' in auto
  assert '--workdir=runs/main' in auto
  named = run('--variant=learn', '--config.sft.updates=5')
  assert '--config=tpu_configs/pipeline.py:learn' in named
  assert '--config.sft.updates=5' in named
