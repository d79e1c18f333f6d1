r"""Synthesises search tasks from a corpus.

  python -m search_agent.synthesis.run \
      --config=tpu_configs/synthesis.py:tiny --workdir=/tmp/syn

writes tasks.train.jsonl, tasks.rl.jsonl (empty unless rl_fraction > 0),
tasks.heldout.jsonl, tasks.heldout_phrasings.jsonl (the held-out tasks
asked again in phrasings no other task uses; empty unless
heldout_phrasings > 0; agent/task.py format),
funnel.{json,md,png}, decisions.jsonl, manifest.json and the journal to
--workdir; the bundled index is built into WORKDIR/index if absent. A
rerun resumes from the journal. Variants: tiny (programmatic, no LLM),
recipe, rl_pool, iris (LLM roles; see tpu_configs/synthesis.py); `,served`
after any of them puts every LLM role on one served model (started here,
or `--config.served.base_url=...`): `--config=tpu_configs/synthesis.py:
tiny,served` runs every LLM role on a tiny model this run serves and
stops. funnel.json `roles` counts each role's calls, retries and parse
failures.
"""

import contextlib
import json
import logging as std_logging
import pathlib

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.synthesis import config as config_lib
from search_agent.synthesis import job as job_lib
from search_agent.synthesis import role_builders
from search_agent.synthesis import served

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Synthesis config file.', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  job = config_lib.job_from_config(_CONFIG.value)
  # One INFO line per model call otherwise (absl routes httpx's logger).
  std_logging.getLogger('httpx').setLevel(std_logging.WARNING)
  with contextlib.ExitStack() as stack:
    if job.served.enabled:
      workdir = pathlib.Path(_WORKDIR.value)
      workdir.mkdir(parents=True, exist_ok=True)
      url = stack.enter_context(served.endpoint(job, workdir))
      job = served.with_endpoint(job, url)
    roles = None
    if any(k not in ('pattern', 'template', 'none', 'path')
           for k in job.roles.values()):  # fmt: skip
      roles = role_builders.LLMRoles()
    report = job_lib.run_job(job, _WORKDIR.value, roles)
  print(json.dumps(report['tasks']))
  t = report['tasks']
  print(
      f'{t["train"]} train + {t["rl"]} RL + {t["heldout"]} held-out tasks'
      f' + {t["heldout_phrasings"]} asked again in held-out phrasings in'
      f' {report["seconds_total"]} s; wrote {_WORKDIR.value}'
  )


if __name__ == '__main__':
  flags.mark_flags_as_required(['config', 'workdir'])
  app.run(main)
