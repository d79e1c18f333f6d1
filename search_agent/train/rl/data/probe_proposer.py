"""How often a checkpoint's proposals parse and pass the filters.

  python -m search_agent.train.rl.data.probe_proposer \\
    --config=tpu_configs/rl.py:searchmaster,tiny,warm \\
    --checkpoint=DIR --seeds=SEEDS.jsonl --index_dir=INDEX [--n=32] \\
    [--samples=4 --temperature=0.7]

Plays the Proposer role of the RL config (its system prompt, step budget,
seed length, toolbox and filters, the programmatic Verifier) on the first
`--n` seeds of `--seeds` (Task JSONL, selfplay/seeds.py's form), `--samples`
times each at `--temperature` (0: greedy), with the checkpoint (an SFT
workdir: checkpoints/ and tokenizer/) on the in-process sampler, and prints
JSON: replies played, replies that parse (reached the validity filter or
failed it), per filter how many reached and passed it, and `mixed_seeds`:
seeds whose samples both passed and failed (a Proposer group that would
carry an advantage).
"""

import asyncio
import collections
import dataclasses
import json
import os

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.evaluation import in_process
from search_agent.rewards import searchmaster as sm
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import tools as tools_lib
from search_agent.selfplay import filters as filters_lib
from search_agent.selfplay import proposal as proposal_lib
from search_agent.selfplay import verifier as verifier_lib
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import selfplay

_CONFIG = config_flags.DEFINE_config_file('config', None, 'The RL config.')
_CHECKPOINT = flags.DEFINE_string('checkpoint', None, 'An SFT workdir.')
_SEEDS = flags.DEFINE_string('seeds', None, 'Seed tasks (Task JSONL).')
_INDEX = flags.DEFINE_string('index_dir', None, 'The search index.')
_N = flags.DEFINE_integer('n', 32, 'Seeds to play.')
_SAMPLES = flags.DEFINE_integer('samples', 1, 'Replies per seed.')
_TEMPERATURE = flags.DEFINE_float('temperature', 0.0, '0: greedy.')
_OUT = flags.DEFINE_string('out', '', 'Also write the JSON (and the replies).')


async def probe(
    c, llm, seeds, engine, samples: int = 1, temperature: float = 0.0
) -> dict:
  """Plays each seed `samples` times; returns the counts (see above)."""
  setup = selfplay.proposer_setup(c)
  agent_cfg = dataclasses.replace(setup.agent_cfg, temperature=temperature)
  tb_cfg = job_lib.toolbox_config(c)
  verifier = verifier_lib.ProgrammaticVerifier()

  async def one(seed, k):
    traj = await react.ReActAgent(llm, agent_cfg).run(
        traj_id=f'probe:{seed.id}:{k}', task_id=seed.id,
        question=proposal_lib.seed_turn(seed, setup.seed_chars),
        system_prompt=setup.proposer_system,
        toolbox=tools_lib.Toolbox(engine, config=tb_cfg,
                                  context=seed.question),
    )  # fmt: skip
    out = await filters_lib.check(traj, verifier, setup.filters, setup.rewards)
    return traj, out

  played = await asyncio.gather(
      *(one(s, k) for s in seeds for k in range(samples))
  )
  reached, passed = collections.Counter(), collections.Counter()
  for _, out in played:
    for f in out.reached:
      reached[f] += 1
      passed[f] += out.failed != f
  parsed = sum(out.proposal is not None for _, out in played)
  outcomes = collections.defaultdict(set)
  for t, out in played:
    outcomes[t.task_id].add(out.failed is None)
  return {
      'seeds': len(seeds),
      'replies_played': len(played),
      'temperature': temperature,
      'mixed_seeds': sum(len(o) == 2 for o in outcomes.values()),
      'parsed': parsed,
      'passed_all': sum(out.failed is None for _, out in played),
      'reached': {f: reached[f] for f in sm.FILTERS},
      'passed': {f: passed[f] for f in sm.FILTERS},
      'failed': dict(collections.Counter(str(o.failed) for _, o in played)),
      'replies': [
          {'seed': t.task_id, 'failed': o.failed, 'reason': o.reason,
           'reply': proposal_lib.final_text(t)}
          for t, o in played
      ],
  }  # fmt: skip


def main(argv):
  del argv
  c = _CONFIG.value
  seeds = list(task_lib.iter_tasks(_SEEDS.value))[: _N.value]
  llm, _ = in_process.build(
      {
          'preset': 'tiny',
          'dims': (
              f'base_num_decoder_layers={c.model.dims.base_num_decoder_layers}',
          ),
          'checkpoint_dir': _CHECKPOINT.value,
          'tokenizer': os.path.join(_CHECKPOINT.value, 'tokenizer'),
          'template': c.tokenizer.chat_template,
          'batch_size': c.sampler.batch_size,
          'max_prompt_len': c.sampler.max_prompt_len,
          'max_new_tokens': c.sampler.max_new_tokens,
      }
  )
  engine = locations.open_engine(
      _INDEX.value, engine_lib.snippet_words_config(c.search.snippet_words)
  )
  try:
    report = asyncio.run(
        probe(c, llm, seeds, engine, _SAMPLES.value, _TEMPERATURE.value)
    )
  finally:
    engine.close()
  replies = report.pop('replies')
  print(json.dumps(report))
  if _OUT.value:
    with open(_OUT.value, 'w', encoding='utf-8') as f:
      json.dump({**report, 'replies': replies}, f, indent=1)


if __name__ == '__main__':
  flags.mark_flags_as_required(['config', 'checkpoint', 'seeds', 'index_dir'])
  app.run(main)
