r"""Evaluates an agent on a benchmark: run, grade, report.

  python -m eval.run --config=tpu_configs/eval.py[:VARIANT[,VARIANT]] \
      --workdir=DIR [--config.field=value ...]

(variants: mas, no_cm, xbench, browsecomp_plus, tiny; e.g. `:xbench,mas`)
writes DIR/{trajectories.jsonl, results.jsonl, report.json, report.md,
manifest.json} (BrowseComp-Plus also runs/run_<query_id>.json,
evaluation_summary.json, detailed_judge_results.csv); rerunning with the same workdir resumes (finished questions
are skipped, failed runs are run again, judge errors are re-graded;
--config.regrade=True grades everything again, e.g. with another judge).
Compare two runs with `python -m eval.compare`.

Progress lines go to the log (stderr) while it runs; the last stdout line is
the summary as JSON. When more than `max_failed_share` of the rollouts fail
(an unreachable or failing policy endpoint), it exits non-zero with one line:
how many failed, the error kinds (`LLMError: ConnectError`, `LLMError: HTTP
500`), the endpoint and what to check.
"""

import json

from absl import app
from absl import flags
from ml_collections import config_flags

from eval import cli
from search_agent.evaluation import config as config_lib
from search_agent.evaluation import datasets
from search_agent.evaluation import job
from search_agent.model import quiet_logs
from search_agent.search import backend
from search_agent.serving import local

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Eval config (tpu_configs/eval.py).', lock_config=True
)
_WORKDIR = flags.DEFINE_string('workdir', None, 'Output directory.')
flags.mark_flags_as_required(['config', 'workdir'])
# The line printed last (JSON): `pass_at_1` keeps its old meaning (judge
# errors left out); `pass_at_1_strict` is the headline (judge errors wrong).
_PRINTED = (
    'headline', 'pass_at_1_strict', 'ci_strict', 'pass_at_1', 'ci', 'questions',
    'rollouts', 'graded',
    'judge_errors', 'statuses', 'repeats', 'failures',
)  # fmt: skip


def main(argv):
  del argv
  quiet_logs.install()
  try:
    report = job.run_config(_CONFIG.value, _WORKDIR.value)
  except (
      config_lib.EvalSetupError,
      datasets.DatasetError,
      backend.BackendError,
      local.LocalServerError,
  ) as e:
    raise SystemExit(f'eval.run: {e}') from e
  s = report['summary']
  print(json.dumps({k: s[k] for k in _PRINTED if k in s}))
  if s['failures']['too_many']:
    raise SystemExit(f'eval.run failed: {s["failures"]["message"]}')


if __name__ == '__main__':
  app.run(main, flags_parser=cli.parse_flags)
