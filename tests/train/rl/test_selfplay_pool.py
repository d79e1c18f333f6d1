"""The seed pool a tiny self-play policy learns by heart
(`make_selfplay_demos --pool=N`): one Proposer demonstration per seed,
paired with the Solver demonstration of the same synthesized task."""

import json

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.train.rl.data import make_selfplay_demos as make


def _traj(tid, task_id, source=None):
  meta = {'role': 'proposer', 'source_task': source} if source else {}
  return traj_lib.Trajectory(
      id=tid, task_id=task_id, question='q', messages=(), meta=meta
  )


def _seed(name):
  return task_lib.Task(id=f'seed:{name}', question=f'{name} text', answer='')


def test_one_pair_per_seed_with_the_solver_of_the_same_task():
  a, b, c = _seed('A'), _seed('B'), _seed('C')
  kept = [
      (_traj('p1', a.id, 'syn-1'), a),  # no Solver demonstration
      (_traj('p2', a.id, 'syn-2'), a),
      (_traj('p3', a.id, 'syn-3'), a),  # A already has its pair
      (_traj('p4', b.id, 'syn-4'), b),
      (_traj('p5', c.id, 'syn-5'), c),
  ]
  solver = [_traj(f's{i}', f'syn-{i}') for i in (2, 3, 4, 5)]
  pairs = make.pool_pairs(kept, solver, 2)
  assert [(p.id, s.id, sd.id) for p, sd, s in pairs] == [
      ('p2', 's2', a.id),
      ('p4', 's4', b.id),
  ]
  assert len(make.pool_pairs(kept, solver, 10)) == 3


def test_pool_files_hold_the_pairs_and_their_seeds(tmp_path):
  a, b = _seed('A'), _seed('B')
  pairs = [
      (_traj('p1', a.id, 'syn-1'), a, _traj('s1', 'syn-1')),
      (_traj('p2', b.id, 'syn-2'), b, _traj('s2', 'syn-2')),
  ]
  make.write_pool(str(tmp_path), pairs, 1)
  ids = lambda name: [
      t.id for t in traj_lib.iter_jsonl(str(tmp_path / f'{name}.jsonl'))
  ]
  assert ids('train') == ['p1', 's1', 'p2', 's2']
  assert ids('val') == ['p1', 's1']
  seeds = [
      json.loads(l)['id']
      for l in (tmp_path / 'seeds.jsonl').read_text().splitlines()
  ]
  assert seeds == [a.id, b.id]
