"""The documented commands work as written: `eval.run :tiny` with no other
flag, combined variants, one-line errors for typos and a missing index."""

import json
import subprocess
import sys

import pytest

from eval import cli
from tpu_configs import eval as eval_config


def _run(repo_root, *args, timeout=300):
  return subprocess.run(
      [sys.executable, '-m', *args], cwd=repo_root, capture_output=True,
      text=True, timeout=timeout, check=False,
  )  # fmt: skip


def test_tiny_runs_without_extra_flags(tmp_path, repo_root):
  out = _run(
      repo_root, 'eval.run', '--config=tpu_configs/eval.py:tiny',
      f'--workdir={tmp_path}',
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['pass_at_1_strict'] == 0.25 and summary['questions'] == 4
  assert (tmp_path / 'index' / 'index_config.json').is_file()
  manifest = json.loads((tmp_path / 'manifest.json').read_text())
  assert manifest['tools']['toolbox']['index_dir'] == str(tmp_path / 'index')


def test_variants_combine():
  c = eval_config.get_config('tiny,no_cm')
  assert c.context.policy == 'none' and c.dataset.format == 'tasks'
  c = eval_config.get_config('xbench,mas')
  assert c.mode == 'mas' and c.dataset.format == 'xbench'
  with pytest.raises(ValueError, match='combine them with commas'):
    eval_config.get_config('tiny,nocm')


def test_a_mistyped_override_is_one_line_naming_the_closest_field(
    tmp_path, repo_root
):
  out = _run(
      repo_root, 'eval.run', '--config=tpu_configs/eval.py:tiny,no_cm',
      f'--workdir={tmp_path}', '--config.agent.max_step=3',
  )  # fmt: skip
  assert out.returncode == 1
  assert out.stderr.strip().splitlines() == [
      'eval.run: unknown config field --config.agent.max_step; did you mean'
      ' --config.agent.max_steps?'
  ]
  paths = set(cli.field_paths(eval_config.get_config('')))
  assert cli.unknown_override(['--config.judg.kind=none'], paths) == (
      'unknown config field --config.judg.kind; did you mean'
      ' --config.judge.kind?'
  )
  assert cli.unknown_override(['--config.repeats=3', '--x=1'], paths) is None


def test_a_missing_index_is_one_line(tmp_path, repo_root):
  out = _run(
      repo_root, 'eval.run', '--config=tpu_configs/eval.py:tiny',
      f'--workdir={tmp_path}', f'--config.search.index_dir={tmp_path}/none',
  )  # fmt: skip
  assert out.returncode == 1
  [line] = out.stderr.strip().splitlines()[-1:]
  assert line.startswith(f'eval.run: {tmp_path}/none is not a built tantivy')


def test_calibrate_on_a_fresh_workdir_names_its_index(tmp_path, repo_root):
  out = _run(
      repo_root, 'index.calibrate', '--config=tpu_configs/search/calibrate.py',
      f'--workdir={tmp_path}',
  )  # fmt: skip
  assert out.returncode == 1
  last = out.stderr.strip().splitlines()[-1]
  assert f'{tmp_path}/index is not a built tantivy index' in last
  assert (
      'python -m index.build --config=tpu_configs/search/build.py'
      f' --workdir={tmp_path}'
  ) in last
