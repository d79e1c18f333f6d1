r"""Filters trajectories into SFT data (or calibrates, or induces a rubric).

  python -m search_agent.filtering.run \
      --config=tpu_configs/filtering.py:tiny --workdir=/tmp/filtering \
      [--config.input_path=ROLLOUTS.jsonl] [--config.mode=calibrate]

Writes filtered.jsonl, decisions.jsonl, report.json and report.md to
--workdir (see search_agent/filtering/job.py for the other modes), and
with an LLM judge llm_roles.json: its calls, re-asks, parse failures and
HTTP retries (llm.role_client.RoleLLM).
"""

import asyncio
import json
import pathlib

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags

from search_agent.filtering import job as job_lib
from search_agent.filtering.config import job_from_config
from search_agent.filtering.config import llm_from_config
from search_agent.llm import role_client

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Filtering config file.', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  job = job_from_config(_CONFIG.value)
  llm = llm_from_config(_CONFIG.value.llm)
  if job.mode == 'calibrate':
    result = job_lib.run_calibration(job, _WORKDIR.value)
    logging.info('calibration: %s', result['choice'])
  elif job.mode == 'induce_rubric':
    if llm is None:
      raise app.UsageError('induce_rubric needs an LLM: set --config.llm.kind')
    asyncio.run(job_lib.run_rubric_induction(job, _WORKDIR.value, llm))
  else:
    if llm is None and (job.judge == 'llm' or job.pipeline.turn_mask):
      raise app.UsageError(
          'the LLM judge or turn masking needs an LLM: set --config.llm.kind'
          ' (and .openai.base_url/.model), or use --config.judge=contains'
          ' and --config.turn_mask.enabled=False'
      )
    judge_llm = llm if job.judge == 'llm' else None
    turn_llm = llm if job.pipeline.turn_mask is not None else None
    rep = asyncio.run(
        job_lib.run_filter(
            job, _WORKDIR.value, judge_llm=judge_llm, turn_llm=turn_llm
        )
    )
    logging.info('kept %d trajectories', rep['output']['trajectories'])
  if isinstance(llm, role_client.RoleLLM):
    counts = {'judge': llm.report()}
    path = pathlib.Path(_WORKDIR.value) / 'llm_roles.json'
    path.write_text(json.dumps(counts, indent=2) + '\n', encoding='utf-8')
    logging.info('judge LLM: %s', counts['judge'])
  print(f'wrote results to {_WORKDIR.value}')


if __name__ == '__main__':
  flags.mark_flags_as_required(['config', 'workdir'])
  app.run(main)
