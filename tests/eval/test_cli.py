"""The documented commands work as written: `eval.run :tiny` with no other
flag, combined variants, one-line errors for typos and a missing index."""

import json
import subprocess
import sys

import pytest

from eval import cli
from search_agent.agent import trajectory
from search_agent.evaluation import results
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
  assert manifest['judge']['identity'] == 'browsecomp/exact_match'
  # Doc ids per tool call in the trajectory; evidence recall in the record.
  [t] = [t for t in trajectory.iter_jsonl(tmp_path / results.TRAJECTORIES)
         if t.task_id == '2wiki-demo-1']  # fmt: skip
  assert t.meta['doc_ids'][0]['tool'] == 'search'
  assert 'Teutberga' in t.meta['doc_ids'][0]['doc_ids']
  recs = {r['task_id']: r for r in results.read_records(
      tmp_path / results.RESULTS).values()}  # fmt: skip
  assert recs['2wiki-demo-1']['evidence_recall'] == 1.0
  assert recs['2wiki-demo-3']['evidence_recall'] == 0.0  # searched Teutberga
  report = json.loads((tmp_path / 'report.json').read_text())
  assert report['summary']['evidence']['questions_with_evidence'] == 4
  # Repeats: avg@N and pass@N (the scripted policy answers the same).
  out = _run(
      repo_root, 'eval.run', '--config=tpu_configs/eval.py:tiny',
      f'--workdir={tmp_path}', '--config.repeats=2',
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-2000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['rollouts'] == 8 and summary['questions'] == 4
  assert summary['repeats'] == {
      'n': 2, 'avg_at_n': 0.25, 'pass_at_n': 0.25, 'per_repeat': [0.25, 0.25]
  }  # fmt: skip
  assert 'eval: 4/4 rollouts done (4 earlier)' in out.stderr


def test_benchmark_variants():
  c = eval_config.get_config('xbench')
  assert c.repeats == 5 and c.grader.protocol == ''  # '' = the format's own
  c = eval_config.get_config('browsecomp_plus')
  assert (c.search.toolset, c.search.top_k) == ('browsecomp_plus', 5)
  assert c.dataset.qrels_path.endswith('browsecomp-plus-qrel_evidence.txt')


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
