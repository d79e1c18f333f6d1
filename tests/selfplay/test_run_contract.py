"""The contract: `rl.run :searchmaster,tiny --config.max_updates=1` end to
end in a subprocess (real tiny MaxText policy, real index, stand-in
Verifier), and what it writes."""

import json
import pathlib
import subprocess
import sys

import pytest

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]
REPO = pathlib.Path(__file__).resolve().parents[2]
KEYS = ('seeds_retained', 'filter_pass', 'h_min_mean', 'open_search_ratio',
        'proposer_reward_mean', 'solver_reward_mean')  # fmt: skip


def test_searchmaster_tiny_contract(tmp_path):
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  with open(log, 'wb') as out:
    proc = subprocess.run(
        [sys.executable, '-m', 'search_agent.train.rl.run',
         '--config=tpu_configs/rl.py:searchmaster,tiny',
         f'--workdir={workdir}', '--config.max_updates=1'],
        cwd=REPO, stdout=out, stderr=subprocess.STDOUT, timeout=600,
        check=False,
    )  # fmt: skip
  assert proc.returncode == 0, log.read_text(errors='replace')[-3000:]
  (row,) = [json.loads(l) for l in (workdir / 'metrics.jsonl').open()]
  assert all(k in row for k in KEYS), sorted(row)
  assert set(row['filter_pass']) == {'tool_use', 'format', 'validity',
                                     'parametric'}  # fmt: skip
  assert set(row['open_search_ratio']) == {'proposer', 'solver'}
  assert row['groups_used'] == 4 and row['seeds'] >= 4
  assert row['seeds_retained'] == 1.0  # tiny: no seed gate
  assert row['filter_reached']['tool_use'] == 2 * row['seeds']
  assert (workdir / 'selfplay_curves.png').stat().st_size > 0
  manifest = json.loads((workdir / 'manifest.json').read_text())
  assert manifest['judge']['name'] == 'programmatic'
  assert manifest['judge']['selfplay']['seed_gate'] is False
  sp = workdir / 'selfplay'
  seeds = list(task_lib.iter_tasks(sp / 'seeds.jsonl'))
  assert manifest['tasks']['path'] == str(sp / 'seeds.jsonl')
  played = [json.loads(l) for l in (sp / 'seeds_played.jsonl').open()]
  assert {p['seed_task'] for p in played} <= {s.id for s in seeds}
  list(task_lib.iter_tasks(sp / 'tasks.jsonl'))  # Task JSONL (maybe empty)
  trajs = list(traj_lib.iter_jsonl(workdir / 'rollouts-w0.jsonl'))
  assert trajs and {t.meta['role'] for t in trajs} >= {'proposer'}
  assert 'EVIDENCE CHAIN' in trajs[0].messages[0].content
  assert trajs[0].messages[1].content.startswith('Seed document: ')
