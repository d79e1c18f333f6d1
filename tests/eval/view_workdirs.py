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

from search_agent.agent import trajectory
from search_agent.evaluation import decryption

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


JUDGE_REPLY = (
    'extracted_final_answer: Lothair II\nreasoning: The response names'
    ' Lothair II, which matches the reference.\ncorrect: yes\nconfidence: 80'
)


def judged_eval_run(workdir: pathlib.Path, index: pathlib.Path) -> pathlib.Path:
  """eval.run :tiny graded by a scripted LLM judge (BrowseComp grader reply)."""
  return eval_run(workdir, index, '--config.judge.kind=scripted',
                  '--config.judge.name=scripted-judge',
                  f'--config.judge.script=({JUDGE_REPLY!r},)')  # fmt: skip


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


def real_synthesis_run(workdir: pathlib.Path) -> pathlib.Path:
  """`synthesis.run :tiny` on 40 seeds (its bundled index built inside)."""
  _run('search_agent.synthesis.run', '--config=tpu_configs/synthesis.py:tiny',
       f'--workdir={workdir}', '--config.progress=False',
       '--config.anchor.num_seeds=40')  # fmt: skip
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
  """An RL workdir in rl.run's layout, from real eval trajectories.

  rollouts-0.jsonl (trajectories given token records), queue/groups/ (scored
  RolloutGroup JSON), queue/consumed.jsonl (group q2 dropped by dynamic
  sampling), metrics.jsonl, parity.json.
  """
  (workdir / 'queue' / 'groups').mkdir(parents=True)
  # Dataset order: the eval appends trajectories as they finish, and the
  # viewer lists an RL run's rollouts in its task pool's order.
  order = [json.loads(x)['id'] for x in TASKS.read_text().splitlines()]
  trajs = sorted(
      trajectory.iter_jsonl(eval_dir / 'trajectories.jsonl'),
      key=lambda t: order.index(t.task_id),
  )
  tokens = {
      'token_ids': list(range(12)),
      'loss_mask': [0] * 4 + [1] * 4 + [0] * 2 + [1] * 2,
      'logprobs': [0.0] * 4 + [-0.5] * 4 + [0.0] * 2 + [-0.25] * 2,
      'versions': [-1] * 4 + [3] * 4 + [-1] * 2 + [4] * 2,
  }
  scores = ((1.0, 1.0, 1.0), (0.2, 0.0, 0.5), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
  votes = ([1, 1], [1, 0], [0, 0], [0, 0])
  rollouts = []
  for k, t in enumerate([trajs[0], trajs[0], trajs[1], trajs[1]]):
    reward = dict(
        zip(('total', 'correct', 'coverage'), scores[k]), claim_votes=votes[k]
    )
    meta = {**t.meta, 'reward': reward, 'group_id': f'q{k // 2 + 1}@d0'}
    rollouts.append(
        {**t.to_json(), 'id': f'rl-{k}', 'tokens': tokens, 'meta': meta}
    )
  # The task pool with required claims, named by the manifest as rl.run does.
  pool = workdir.parent.parent / 'task_pools' / f'{workdir.name}.jsonl'
  pool.parent.mkdir(exist_ok=True)
  with open(pool, 'w') as f:
    for line in TASKS.read_text().splitlines():
      task = json.loads(line)
      task['claims'] = [
          {'subject': task['evidence'][0], 'relation': 'mentions', 'object': task['answer']},
          {'subject': task['answer'], 'relation': 'spouse', 'object': task['evidence'][0]},
      ]  # fmt: skip
      f.write(json.dumps(task) + '\n')
  (workdir / 'manifest.json').write_text(
      json.dumps({'role': 'all', 'tasks': {'path': str(pool)}})
  )
  with open(workdir / 'rollouts-0.jsonl', 'w') as f:
    for obj in rollouts:
      f.write(json.dumps(obj) + '\n')
  for g, pair in (('q1@d0', (0, 1)), ('q2@d0', (2, 3))):
    group = {
        'group_id': g, 'task_id': rollouts[pair[0]]['task_id'], 'dispatch_batch': 0,
        'trajectories': [{'trajectory_id': rollouts[k]['id'], 'tokens': tokens,
                          'reward': scores[k][0], 'correct': scores[k][1],
                          'coverage': scores[k][2]} for k in pair],
        'meta': {'seconds': 1.5},
    }  # fmt: skip
    (workdir / 'queue' / 'groups' / f'{g}.json').write_text(json.dumps(group))
  (workdir / 'queue' / 'consumed.jsonl').write_text(
      json.dumps({'update': 1, 'groups': ['q1@d0'], 'dropped': ['q2@d0']})
      + '\n'
  )
  with open(workdir / 'metrics.jsonl', 'w') as f:
    for step in range(1, 6):
      f.write(
          json.dumps(
              {
                  'update': step,
                  'step': step,
                  'loss': 1.0 / step,
                  'reward_mean': 0.1 * step,
              }
          )
          + '\n'
      )
  (workdir / 'parity.json').write_text(
      json.dumps({'max_abs_logprob_gap': 0.0012})
  )
  return workdir
