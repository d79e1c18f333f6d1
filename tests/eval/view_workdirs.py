"""Workdirs for the viewer tests, written by the real binaries.

Eval runs come from `python -m eval.run --config=tpu_configs/eval.py:tiny`
over the real bundled-2Wiki index (a scripted policy: the test is about the
viewer), an encrypted one from the same tasks written as a BrowseComp-Plus
file encrypted with a canary, a filtering run from `filtering.run :tiny`.
Synthesis and RL directories are written here in the formats their
binaries use (Task records, RolloutGroup JSON), since those binaries are
still being built.
"""

import json
import pathlib
import subprocess
import sys

from eval import decryption
from search_agent.agent import trajectory

REPO = pathlib.Path(__file__).resolve().parents[2]
TASKS = REPO / 'eval/data/2wiki_demo_tasks.jsonl'
CANARY = 'viewer-test-canary-0001'


def _run(*args: str) -> None:
  out = subprocess.run(
      [sys.executable, '-m', *args], cwd=REPO, capture_output=True,
      text=True, timeout=300, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]


def eval_run(
    workdir: pathlib.Path, index: pathlib.Path, *extra: str
) -> pathlib.Path:
  _run('eval.run', '--config=tpu_configs/eval.py:tiny', f'--workdir={workdir}',
       f'--config.search.index_dir={index}', *extra)  # fmt: skip
  return workdir


def questions() -> list[str]:
  return [
      json.loads(l)['question']
      for l in TASKS.read_text().splitlines()
      if l.strip()
  ]


def encrypted_eval_run(
    workdir: pathlib.Path, index: pathlib.Path
) -> pathlib.Path:
  """An eval.run over the demo tasks as an encrypted BrowseComp-Plus file."""
  workdir.mkdir(parents=True)
  data = workdir.parent / f'{workdir.name}_dataset.jsonl'
  with open(data, 'w') as f:
    for line in TASKS.read_text().splitlines():
      t = json.loads(line)
      enc = lambda s: decryption.browsecomp_encrypt(s, CANARY)
      f.write(json.dumps({'query_id': t['id'], 'query': enc(t['question']),
                          'answer': enc(t['answer']), 'canary': CANARY}) + '\n')  # fmt: skip
  return eval_run(workdir, index, '--config.dataset.format=browsecomp_plus',
                  '--config.dataset.name=bcp-demo', f'--config.dataset.path={data}')  # fmt: skip


def filtering_run(workdir: pathlib.Path) -> pathlib.Path:
  _run(
      'search_agent.filtering.run',
      '--config=tpu_configs/filtering.py:tiny',
      f'--workdir={workdir}',
  )
  return workdir


def synthesis_run(workdir: pathlib.Path) -> pathlib.Path:
  """Tasks with claims and evidence paths (Figure 6 shape), funnel, decisions."""
  workdir.mkdir(parents=True)
  task = {
      'id': 'syn-1', 'answer': 'Lothair II', 'aliases': [],
      'question': 'Which king married the daughter of Boso the Elder and was the son of Ermengarde of Tours?',
      'evidence': ['Teutberga', 'Boso the Elder', 'Ermengarde of Tours', 'Lothair II'],
      'claims': [
          {'subject': 'Teutberga', 'relation': 'daughter of', 'object': 'Boso the Elder', 'source': 'Teutberga#p0'},
          {'subject': 'Teutberga', 'relation': 'married', 'object': 'Lothair II', 'source': 'Teutberga#p0'},
          {'subject': 'Ermengarde of Tours', 'relation': 'mother of', 'object': 'Lothair II', 'source': 'Ermengarde of Tours#p0'},
          {'subject': 'Lothair I', 'relation': 'father of', 'object': 'Lothair II', 'source': 'Lothair II#p0'},
      ],
      'meta': {'evidence_paths': [['Boso the Elder', 'Teutberga', 'Lothair II'],
                                  ['Ermengarde of Tours', 'Lothair II']],
               'answer_page': 'Lothair II'},
  }  # fmt: skip
  dropped = {
      **task,
      'id': 'syn-2',
      'question': 'Who was Lothair II?',
      'claims': task['claims'][:1],
  }
  (workdir / 'tasks.train.jsonl').write_text(json.dumps(task) + '\n')
  (workdir / 'tasks.heldout.jsonl').write_text(json.dumps(dropped) + '\n')
  (workdir / 'funnel.json').write_text(
      json.dumps(
          {
              'candidates': 2,
              'controller_passed': 2,
              'critic_excellent': 1,
              'solver_checked': 1,
          }
      )
  )
  (workdir / 'decisions.jsonl').write_text(
      json.dumps({'task_id': 'syn-1', 'outcome': 'kept', 'reason': ''}) + '\n'
      + json.dumps({'task_id': 'syn-2', 'outcome': 'rejected', 'reason': 'answer title in question'}) + '\n')  # fmt: skip
  return workdir


def rl_run(workdir: pathlib.Path, eval_dir: pathlib.Path) -> pathlib.Path:
  """Rollouts (real eval trajectories given tokens), scored groups, metrics."""
  workdir.mkdir(parents=True)
  (workdir / 'groups').mkdir()
  trajs = list(trajectory.iter_jsonl(eval_dir / 'trajectories.jsonl'))
  rollouts = []
  for k, t in enumerate([trajs[0], trajs[0]]):  # two rollouts of one task
    obj = t.to_json()
    n = 12
    obj['id'] = f'rl-{k}'
    obj['tokens'] = {'token_ids': list(range(n)), 'loss_mask': [0] * 4 + [1] * 4 + [0] * 2 + [1] * 2,
                     'logprobs': [0.0] * 4 + [-0.5] * 4 + [0.0] * 2 + [-0.25] * 2,
                     'versions': [-1] * 4 + [3] * 4 + [-1] * 2 + [4] * 2}  # fmt: skip
    rollouts.append(obj)
  with open(workdir / 'rollouts.jsonl', 'w') as f:
    for obj in rollouts:
      f.write(json.dumps(obj) + '\n')
  group = {'group_id': 'q1@d0', 'task_id': trajs[0].task_id, 'dispatch_batch': 0,
           'trajectories': [{'trajectory_id': o['id'], 'tokens': o['tokens'], 'reward': r, 'correct': y, 'coverage': c}
                            for o, r, y, c in zip(rollouts, (1.0, 0.2), (1.0, 0.0), (1.0, 0.5))]}  # fmt: skip
  (workdir / 'groups' / 'q1@d0.json').write_text(json.dumps(group))
  with open(workdir / 'metrics.jsonl', 'w') as f:
    for step in range(5):
      f.write(
          json.dumps(
              {
                  'step': step,
                  'loss': 1.0 / (step + 1),
                  'reward_mean': 0.1 * step,
              }
          )
          + '\n'
      )
  return workdir
