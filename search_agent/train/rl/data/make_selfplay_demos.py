"""Proposer and Solver demonstrations for a tiny self-play policy.

  python -m search_agent.train.rl.data.make_selfplay_demos \\
    --config=tpu_configs/rl.py:searchmaster,tiny,warm \\
    --tasks=W/tasks/tasks.train.jsonl --solver=W/split/train.jsonl \\
    --index_dir=W/index/index --out=DIR [--proposer_demos=600] [--pool=25]

Proposer demonstrations (selfplay/demonstrations.py) are rendered from the
synthesized multi-hop tasks of `--tasks` under the RL config's self-play
settings: its Proposer system prompt (ECG, the tools as the config shows
them), step budget, seed length, filters, and its toolbox (tools, top_k,
snippet words) over `--index_dir`. Solver demonstrations are the main
job's (`--solver`, Trajectory JSONL) with the run's Solver system prompt.
Writes, in DIR:
  proposer.jsonl, solver.jsonl   the kept demonstrations (Trajectory JSONL);
  train.jsonl, val.jsonl         both, shuffled, the last `--val` of each
                                 role held out (for train.sft, data.format
                                 'trajectory');
  seeds.jsonl                    the seed tasks of the demonstrated pages
                                 (the run's seed pool: selfplay.seeds_path);
  report.json                    counts: tasks tried, kept, skipped by
                                 reason, filter verdicts;
  pool/train.jsonl, pool/seeds.jsonl, pool/val.jsonl
                                 with `--pool=N`: a seed pool small enough
                                 to learn by heart. For up to N seeds, in
                                 the order kept, the first Proposer
                                 demonstration whose task has a kept Solver
                                 demonstration, and that Solver one (the
                                 Solver then answers the question the
                                 Proposer writes); val: the first 3 of those pairs again (NLL on what is
                                 learned by heart).
"""

import asyncio
import collections
import json
import os
import random

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.corpus import sources
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import tools as tools_lib
from search_agent.selfplay import demonstrations as demos
from search_agent.selfplay import seeds as seeds_lib
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import selfplay

_CONFIG = config_flags.DEFINE_config_file('config', None, 'The RL config.')
_TASKS = flags.DEFINE_string('tasks', None, 'Synthesized tasks (Task JSONL).')
_SOLVER = flags.DEFINE_string(
    'solver', None, "The main job's demonstrations (Trajectory JSONL)."
)
_INDEX = flags.DEFINE_string('index_dir', None, 'The search index.')
_OUT = flags.DEFINE_string('out', None, 'Output directory.')
_N_PROPOSER = flags.DEFINE_integer(
    'proposer_demos', 600, 'Proposer demonstrations to keep (at most).'
)
_N_SOLVER = flags.DEFINE_integer(
    'solver_demos', 600, 'Solver demonstrations to keep (at most).'
)
_VAL = flags.DEFINE_integer('val', 20, 'Held-out demonstrations per role.')
_SEED = flags.DEFINE_integer('seed', 0, 'Shuffling seed.')
_POOL = flags.DEFINE_integer(
    'pool', 0, 'Also write pool/: N seeds with both roles (0: none).'
)
_POOL_VAL_PAIRS = 3  # pool/val.jsonl: the first pairs again


def pool_pairs(kept, solver, n: int):
  """Up to `n` (Proposer demo, seed, Solver demo) triples, one per seed:
  the first kept Proposer demonstration whose synthesized task has a
  Solver demonstration in `solver` (same task id)."""
  by_task = {t.task_id: t for t in solver}
  out, seen = [], set()
  for traj, seed in kept:
    answer = by_task.get(traj.meta.get('source_task'))
    if answer is None or seed.id in seen:
      continue
    seen.add(seed.id)
    out.append((traj, seed, answer))
    if len(out) == n:
      break
  return out


def write_pool(out_dir: str, pairs, val_n: int) -> None:
  """pool/{train,val,seeds}.jsonl (see the module docstring)."""
  os.makedirs(out_dir, exist_ok=True)
  rows = [t for p, _, s in pairs for t in (p, s)]
  traj_lib.write_jsonl(os.path.join(out_dir, 'train.jsonl'), rows)
  traj_lib.write_jsonl(os.path.join(out_dir, 'val.jsonl'), rows[: 2 * val_n])
  seeds_lib.write_tasks(
      os.path.join(out_dir, 'seeds.jsonl'), [seed for _, seed, _ in pairs]
  )


async def proposer_demos(c, tasks, seeds, engine, n):
  """Up to `n` kept demonstrations and the report's counts."""
  setup = selfplay.proposer_setup(c)
  tb_cfg = job_lib.toolbox_config(c)
  kept, counts = [], collections.Counter()
  for task in tasks:
    if len(kept) >= n:
      break
    if len(task.evidence) < 2:
      continue
    counts['tried'] += 1
    seed = seeds.get(task.evidence[0])
    if seed is None:
      counts['skipped: no_seed_page'] += 1
      continue
    toolbox = tools_lib.Toolbox(engine, config=tb_cfg, context=seed.question)
    try:
      traj, outcome = await demos.demonstrate(task, seed, toolbox, setup)
    except demos.DemonstrationError as e:
      counts[f'skipped: {e.reason}'] += 1
      continue
    if outcome.failed is not None:
      counts[f'failed filter: {outcome.failed}'] += 1
      logging.info('%s failed %s: %s', task.id, outcome.failed, outcome.reason)
      continue
    counts['kept'] += 1
    kept.append((traj, seed))
  return kept, counts


def main(argv):
  del argv
  c = _CONFIG.value
  os.makedirs(_OUT.value, exist_ok=True)
  tasks = list(task_lib.iter_tasks(_TASKS.value))
  random.Random(_SEED.value).shuffle(tasks)
  seeds = seeds_lib.seeds_by_title(
      sources.CorpusSpec(kind=c.selfplay.corpus_kind,
                         path=c.selfplay.corpus_path, derive_links=False)
  )  # fmt: skip
  engine = locations.open_engine(
      _INDEX.value, engine_lib.snippet_words_config(c.search.snippet_words)
  )
  try:
    kept, counts = asyncio.run(
        proposer_demos(c, tasks, seeds, engine, _N_PROPOSER.value)
    )
  finally:
    engine.close()
  proposer = [t for t, _ in kept]
  system = job_lib.system_text(c)
  solver = [
      demos.with_system(t, system) for t in traj_lib.iter_jsonl(_SOLVER.value)
  ][: _N_SOLVER.value]
  unique_seeds = {s.id: s for _, s in kept}
  seeds_lib.write_tasks(
      os.path.join(_OUT.value, 'seeds.jsonl'), list(unique_seeds.values())
  )
  rng = random.Random(_SEED.value)
  val_n = _VAL.value
  train = proposer[:-val_n] + solver[:-val_n]
  val = proposer[-val_n:] + solver[-val_n:]
  rng.shuffle(train)
  for name, rows in (('proposer', proposer), ('solver', solver),
                     ('train', train), ('val', val)):  # fmt: skip
    traj_lib.write_jsonl(os.path.join(_OUT.value, f'{name}.jsonl'), rows)
  pool = []
  if _POOL.value:
    pool = pool_pairs(kept, solver, _POOL.value)
    write_pool(os.path.join(_OUT.value, 'pool'), pool, _POOL_VAL_PAIRS)
  report = {
      'pool_seeds': len(pool),
      'proposer': dict(counts),
      'solver_kept': len(solver),
      'seeds': len(unique_seeds),
      'train': len(train),
      'val': len(val),
  }
  with open(os.path.join(_OUT.value, 'report.json'), 'w') as f:
    json.dump(report, f, indent=1)
  print(json.dumps(report))


if __name__ == '__main__':
  flags.mark_flags_as_required(['config', 'tasks', 'solver', 'index_dir',
                                'out'])  # fmt: skip
  app.run(main)
