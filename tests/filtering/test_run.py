"""Pulse tests of `python -m search_agent.filtering.run` and its jobs."""

import asyncio
import collections
import dataclasses
import json
import subprocess
import sys

import pytest

from search_agent.agent import trajectory as T
from search_agent.filtering import config as run_lib
from search_agent.filtering import job as job_lib
from search_agent.llm import scripted
from tpu_configs import filtering as filtering_config


def run_binary(repo_root, workdir, *overrides, variant='tiny', ok=True):
  cmd = [
      sys.executable,
      '-m',
      'search_agent.filtering.run',
      f'--config=tpu_configs/filtering.py:{variant}',
      f'--workdir={workdir}',
      *overrides,
  ]
  done = subprocess.run(
      cmd, cwd=repo_root, capture_output=True, text=True, timeout=120
  )
  assert (done.returncode == 0) == ok, done.stderr[-2000:]
  return done


def test_pulse_filter_then_calibrate(repo_root, tmp_path):
  out = tmp_path / 'work'
  run_binary(repo_root, out)
  kept = list(T.iter_jsonl(out / 'filtered.jsonl'))
  report = json.loads((out / 'report.json').read_text())
  decisions = [json.loads(l) for l in open(out / 'decisions.jsonl')]
  assert report['input']['lines'] == 20
  # Every input trajectory ends in exactly one place.
  assert len(decisions) == 20
  assert len({d['traj_id'] for d in decisions}) == 20
  assert sum(d['outcome'] == 'kept' for d in decisions) == len(kept)
  assert report['output']['trajectories'] == len(kept)
  stages = report['stages']
  for a, b in zip(stages, stages[1:]):
    assert b['in'] == a['kept']
  assert [s['name'] for s in stages] == [
      'rollout_cap',
      'correctness',
      'degeneration',
      'min_tool_turns',
      'dedup',
      'failed_turns',
  ]
  # Measured on the 20 bundled trajectories: 9 fail the 'contains' judge;
  # the most repetitive one (a ruminating 'Wait, ...' spiral, ratio 3.32)
  # stays under the calibrated 3.34.
  assert stages[1]['reasons'] == {'incorrect': 9}
  assert len(kept) == 11
  md = (out / 'report.md').read_text()
  assert '| correctness | 20 | 11 | 9 | 0 | incorrect: 9 |' in md
  run_binary(
      repo_root,
      out,
      '--config.mode=calibrate',
      '--config.loop_periods=(30,500)',
      '--config.loop_lengths=(4096,)',
  )
  cal = json.loads((out / 'calibration.json').read_text())
  assert cal['n_trajectories'] == 20
  assert cal['unreadable_lines'] == 0
  assert (out / 'line_errors.jsonl').read_text() == ''
  assert cal['choice']['false_positive_rate'] == 0.0
  assert 'Chosen threshold' in (out / 'calibration.md').read_text()


def test_pulse_iris_with_scripted_llm(repo_root, tmp_path):
  """The iris variant end to end through the registry's scripted LLM."""
  data = repo_root / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'
  reply = '{"correct": true, "label": "keep"}'
  run_binary(
      repo_root,
      tmp_path,
      f'--config.input_path={data}',
      '--config.llm.kind=scripted',
      f"--config.llm.script=('{reply}',)",
      variant='iris',
  )
  rep = json.loads((tmp_path / 'report.json').read_text())
  stages = {s['name']: s for s in rep['stages']}
  assert rep['settings']['judge_name'] == 'scripted'
  assert stages['correctness']['kept'] == 20
  # Iris N = 2: one of the 20 makes two tool-call turns (both judged).
  assert stages['min_tool_turns']['kept'] == 1
  assert stages['turn_mask']['stats']['turns_judged'] == 2
  assert stages['turn_mask']['stats']['turns_masked'] == 0
  judge = json.loads((tmp_path / 'llm_roles.json').read_text())['judge']
  assert judge['calls'] >= 2 and judge['parse_failures'] == 0


def test_llm_modes_without_an_llm_fail_clearly(repo_root, tmp_path):
  done = run_binary(repo_root, tmp_path, variant='iris', ok=False)
  assert 'input_path is empty' in done.stderr
  data = repo_root / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'
  done = run_binary(
      repo_root,
      tmp_path,
      f'--config.input_path={data}',
      variant='iris',
      ok=False,
  )
  assert 'needs an LLM: set --config.llm.kind' in done.stderr


@pytest.mark.parametrize('variant', ['tiny', 'recipe', 'iris'])
def test_configs_convert(variant):
  c = filtering_config.get_config(variant)
  c.input_path = c.input_path or 'x.jsonl'
  job = run_lib.job_from_config(c)
  assert (job.pipeline.turn_mask is not None) == (variant == 'iris')
  assert job.pipeline.rollouts_per_task == (3 if variant == 'recipe' else 0)
  if variant == 'recipe':
    assert job.pipeline.degeneration.max_ratio == 0
    assert job.pipeline.degeneration.check_unterminated
  assert run_lib.llm_from_config(c.llm) is None
  c.llm.kind = 'openai'
  c.llm.openai.base_url = 'http://127.0.0.1:1/v1'
  c.llm.openai.model = 'judge'
  assert run_lib.llm_from_config(c.llm).name == 'judge'


def test_iris_job_with_scripted_judges(repo_root, tmp_path):
  """Harness test: the LLM answer judge and turn judge wired through a run."""
  c = filtering_config.get_config('iris')
  c.input_path = str(
      repo_root / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'
  )
  c.min_tool_turns = 1
  c.turn_mask.max_masked_fraction = 0.5
  job = run_lib.job_from_config(c)
  calls = collections.Counter()

  def respond(messages):
    prompt = messages[-1]['content']
    if 'JUDGE THIS TURN' in prompt:
      calls['turn'] += 1
      return '{"label": "mask", "reason": "item 2"}'
    calls['answer'] += 1
    return '{"correct": true}'

  llm = scripted.ScriptedLLM(respond)
  rep = asyncio.run(
      job_lib.run_filter(job, tmp_path, judge_llm=llm, turn_llm=llm)
  )
  by_name = {s['name']: s for s in rep['stages']}
  assert by_name['correctness']['kept'] == 20
  assert by_name['degeneration']['kept'] == 20
  # Every label is 'mask'. 19 trajectories have 2 assistant turns (1 judged,
  # cap 2 x 0.5 = 1); one has 3 (2 judged, cap floor(1.5) = 1, 1 capped).
  stats = by_name['turn_mask']['stats']
  assert stats['turns_judged'] == 21
  assert stats['turns_masked'] == 20
  assert stats['mask_labels_over_cap'] == 1
  kept = list(T.iter_jsonl(tmp_path / 'filtered.jsonl'))
  assert list(T.iter_jsonl(tmp_path / 'undecided.jsonl')) == []
  assert all(
      [m.loss for m in t.messages if m.role == 'assistant'][0] is False
      for t in kept
  )
  assert calls['turn'] == by_name['turn_mask']['stats']['turns_judged']


def test_judge_failures_go_to_undecided(repo_root, tmp_path):
  data = repo_root / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'
  job = job_lib.FilterJob(input_path=str(data), judge='llm')
  verdicts = {}  # prompt -> its reply: every other trajectory unreadable

  def respond(messages):
    key = messages[-1]['content']
    if key not in verdicts:
      verdicts[key] = 'not json' if len(verdicts) % 2 else '{"correct": true}'
    return verdicts[key]

  llm = scripted.ScriptedLLM(respond)
  rep = asyncio.run(job_lib.run_filter(job, tmp_path, judge_llm=llm))
  stage = rep['stages'][1]
  assert stage['errors'] == 10 and stage['kept'] == 10
  undecided = list(T.iter_jsonl(tmp_path / 'undecided.jsonl'))
  assert len(undecided) == 10
  assert (
      'JudgeReplyError' in stage['error_examples']['judge_error'][0]['detail']
  )


def test_calibration_counts_unreadable_lines(repo_root, tmp_path):
  data = repo_root / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'
  lines = data.read_text(encoding='utf-8').splitlines()[:3]
  path = tmp_path / 'in.jsonl'
  path.write_text('\n'.join([lines[0], '{broken', *lines[1:]]) + '\n')
  job = job_lib.FilterJob(
      mode='calibrate',
      input_path=str(path),
      loop_periods=(30,),
      loop_lengths=(4096,),
  )
  cal = job_lib.run_calibration(job, tmp_path / 'out')
  assert cal['n_trajectories'] == 3 and cal['unreadable_lines'] == 1
  (row,) = [json.loads(l) for l in open(tmp_path / 'out' / 'line_errors.jsonl')]
  assert row['line_no'] == 2 and 'JSONDecodeError' in row['reason']
  md = (tmp_path / 'out' / 'calibration.md').read_text()
  assert '1 unreadable input lines' in md
  rub = dataclasses.replace(job, mode='induce_rubric', rubric_samples=2)
  llm = scripted.ScriptedLLM(lambda _: '1. Mask repeated searches.')
  asyncio.run(job_lib.run_rubric_induction(rub, tmp_path / 'rubric', llm))
  text = (tmp_path / 'rubric' / 'line_errors.jsonl').read_text()
  assert json.loads(text)['line_no'] == 2
