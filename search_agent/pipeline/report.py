r"""Writes a pipeline run's report: DIR/report.json, DIR/report.md, plots.

  python -m search_agent.pipeline.report --run_dir=DIR --workdir=DIR/report \
      --evals=before_sft:eval_before_sft,after_sft:eval_after_sft,...

report.json: the variant, the device JAX saw and why that variant ran;
pass@1 per evaluation (n, value, Wilson 95% ci_low/ci_high), one verdict
line (did the model learn, and if not why: verdict.py),
paired tests between consecutive evaluations (exact McNemar, paired
bootstrap), with --rl_seen=SFT_STAGE,RL_STAGE the same for the two on the
tasks RL trained on (`rl_seen`), with --rl_reach=LABEL:SFT_STAGE:RL_STAGE,...
the same on each of rl_seen's other task sets (`rl_reach`), with
--phrasings=LABEL:STAGE,... pass@1 on the held-out tasks asked again in
phrasings no training task used, paired with the same tasks as first asked
(`heldout_phrasings`), stage seconds,
the pretraining/SFT loss and RL reward curves, tool calls per trajectory
(by tool, and how trajectories ended), and the manifest of every stage
(command, hash, config, key figure) with library versions. Plots go to
--workdir.
"""

import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
from typing import Sequence

from absl import app
from absl import flags

from search_agent import stats
from search_agent.agent import teacher
from search_agent.pipeline import figures
from search_agent.pipeline import plots
from search_agent.pipeline import report_md
from search_agent.pipeline import runner
from search_agent.pipeline import stages as stages_lib
from search_agent.pipeline import verdict as verdict_lib

_RUN_DIR = flags.DEFINE_string('run_dir', None, 'The pipeline run directory.')
_WORKDIR = flags.DEFINE_string('workdir', None, 'Where the plots go.')
_EVALS = flags.DEFINE_list('evals', [], 'label:stage of each evaluation.')
_VARIANT = flags.DEFINE_string('variant', '', 'Pipeline config variant.')
_DEVICE_KIND = flags.DEFINE_string(
    'device_kind', '', 'What JAX saw when the pipeline started.'
)
_VARIANT_REASON = flags.DEFINE_string(
    'variant_reason', '', 'Why this variant ran.'
)
_RL_SEEN = flags.DEFINE_list(
    'rl_seen', [], 'SFT and RL eval stages on the tasks RL trained on.'
)
_RL_REACH = flags.DEFINE_list(
    'rl_reach',
    [],
    "label:sft_stage:rl_stage of each of rl_seen's other task sets.",
)
_PHRASINGS = flags.DEFINE_list(
    'phrasings',
    [],
    'label:stage of each evaluation on held-out phrasings (the label of the'
    ' held-out page evaluation of the same checkpoint).',
)
_VERSIONS = ('jax', 'flax', 'optax', 'maxtext', 'tantivy', 'orbax-checkpoint')


def tool_calls(stage_dir: str, name: str = 'results.jsonl') -> dict:
  """Histogram and mean of tool calls per trajectory, trajectories calling
  each tool, and how trajectories ended (answered, or the limit they hit)."""
  rows = figures.read_jsonl(os.path.join(stage_dir, name))
  counts = [int(r.get('n_tool_calls', 0)) for r in rows]
  hist: dict[str, int] = {}
  for n in counts:
    hist[str(n)] = hist.get(str(n), 0) + 1
  mean = sum(counts) / len(counts) if counts else 0.0
  calling: dict[str, int] = {}
  endings: dict[str, int] = {}
  for r in rows:
    for tool, n in (r.get('tool_calls_by_name') or {}).items():
      calling[tool] = calling.get(tool, 0) + (n > 0)
    if r.get('status'):
      endings[r['status']] = endings.get(r['status'], 0) + 1
  return {'histogram': dict(sorted(hist.items(), key=lambda x: int(x[0]))),
          'mean': mean, 'trajectories': len(counts),
          'calling': dict(sorted(calling.items())),
          'endings': dict(sorted(endings.items()))}  # fmt: skip


def well_formed(stage_dir: str) -> float | None:
  """Fraction of eval trajectories whose first reply was a valid call."""
  rows = figures.read_jsonl(os.path.join(stage_dir, 'trajectories.jsonl'))
  firsts = []
  for t in rows:
    replies = [m for m in t.get('messages', ()) if m['role'] == 'assistant']
    if replies:
      firsts.append(
          bool(replies[0]['tool_calls']) and not replies[0]['invalid']
      )
  return sum(firsts) / len(firsts) if firsts else None


def _first_page(task: dict) -> str:
  path = task.get('meta', {}).get('evidence_path') or task.get('evidence')
  if not path:
    return ''
  hop = path[0]
  return hop.get('title', '') if isinstance(hop, dict) else str(hop)


def query_names_first_page(
    stage_dir: str, tasks: dict[str, dict]
) -> float | None:
  """Fraction of eval trajectories whose first search query holds the first
  evidence page's title (parenthetical dropped): did the model copy the
  entity from the question into its query?"""
  hits = []
  for t in figures.read_jsonl(os.path.join(stage_dir, 'trajectories.jsonl')):
    task = tasks.get(t.get('task_id'))
    if task is None:
      continue
    title = teacher.display_title(_first_page(task)).lower()
    calls = [
        c
        for m in t.get('messages', ())
        for c in m.get('tool_calls', ())
        if c.get('name') == 'search'
    ]
    query = calls[0].get('arguments', {}).get('query', '') if calls else ''
    query = ' '.join(query) if isinstance(query, list) else str(query)
    hits.append(bool(title) and title in query.lower())
  return sum(hits) / len(hits) if hits else None


# The teacher's thought before an answer (teacher.relation_thought).
_RELATION_THOUGHT = re.compile(r'The answer is the ([a-z][a-z ]*)\.')


def relation_named(stage_dir: str, tasks: dict[str, dict]) -> dict | None:
  """Shares of eval trajectories whose last reply names the question's
  relation ('The answer is the date of death.', as the teacher's
  demonstrations do), another relation, or none: did the model read what
  the question asks for? None without such tasks."""
  counts = {'asked': 0, 'other': 0, 'none': 0}
  for t in figures.read_jsonl(os.path.join(stage_dir, 'trajectories.jsonl')):
    relations = tasks.get(t.get('task_id'), {}).get('meta', {}).get('relations')
    if not relations:
      continue
    replies = [m for m in t.get('messages', ()) if m['role'] == 'assistant']
    text = ' '.join(
        replies[-1].get(k) or '' for k in ('reasoning', 'content')
    ) if replies else ''  # fmt: skip
    named = _RELATION_THOUGHT.search(text)
    if named is None:
      counts['none'] += 1
    elif named.group(1) == relations[-1].replace('_', ' '):
      counts['asked'] += 1
    else:
      counts['other'] += 1
  n = sum(counts.values())
  if not n:
    return None
  return {'n': n, **{k: v / n for k, v in counts.items()}}


def _versions() -> dict[str, str]:
  out = {'python': platform.python_version()}
  for name in _VERSIONS:
    try:
      out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      out[name] = 'not installed'
  try:
    out['git_commit'] = subprocess.run(
        ['git', 'rev-parse', 'HEAD'], capture_output=True, text=True,
        check=False, timeout=10,
    ).stdout.strip()  # fmt: skip
  except OSError:
    out['git_commit'] = ''
  return out


def rl_seen(run_dir: str, sft_stage: str, rl_stage: str) -> dict:
  """pass@1 of SFT and RL on one task set (e.g. the tasks RL trained on),
  paired."""
  sft = figures.eval_outcomes(os.path.join(run_dir, sft_stage))
  rl = figures.eval_outcomes(os.path.join(run_dir, rl_stage))
  return {
      'sft': {**stats.pass_at_1(sft), 'stage': sft_stage},
      'rl': {**stats.pass_at_1(rl), 'stage': rl_stage},
      'paired': {
          **stats.mcnemar(sft, rl),
          'bootstrap_95': stats.paired_bootstrap(sft, rl),
      },
  }


def _paired(before: dict[str, bool], after: dict[str, bool]) -> dict:
  return {
      **stats.mcnemar(before, after),
      'bootstrap_95': stats.paired_bootstrap(before, after),
  }


def _as_asked_first(
    outcomes: dict[str, bool], tasks: dict[str, dict]
) -> dict[str, bool]:
  """Outcomes of tasks asked again, keyed by the task they ask again
  (meta `rephrases`)."""
  out = {}
  for task_id, ok in outcomes.items():
    first = tasks.get(task_id, {}).get('meta', {}).get('rephrases')
    if first:
      out[first] = ok
  return out


def heldout_phrasings(
    run_dir: str,
    evals: Sequence[tuple[str, str]],
    tasks: dict[str, dict],
    pages: dict[str, dict[str, bool]],
    held_out_ids: Sequence[str] = (),
) -> dict:
  """pass@1 (Wilson) on held-out phrasings per evaluation, the paired test
  against the same tasks in their trained phrasing (`vs_pages`: `pages`,
  the held-out page outcomes of each label; 'lost' = right only as trained)
  and between consecutive evaluations: the held-out pages' figures, on
  questions in words no training task used."""
  outcomes = {
      label: figures.eval_outcomes(os.path.join(run_dir, stage))
      for label, stage in evals
  }
  out = {
      'phrasings': list(held_out_ids),
      'pass_at_1': {},
      'vs_pages': {},
      'paired': {},
      'well_formed_first_call': {},
      'query_names_first_page': {},
      'relation_named': {},
      'tool_calls': {},
  }
  for label, stage in evals:
    d = os.path.join(run_dir, stage)
    out['pass_at_1'][label] = {
        **stats.pass_at_1(outcomes[label]),
        'stage': stage,
    }
    if label in pages:
      out['vs_pages'][label] = _paired(
          pages[label], _as_asked_first(outcomes[label], tasks)
      )
    out['well_formed_first_call'][label] = well_formed(d)
    out['query_names_first_page'][label] = query_names_first_page(d, tasks)
    out['relation_named'][label] = relation_named(d, tasks)
    out['tool_calls'][label] = tool_calls(d)
  for (a, _), (b, _) in zip(evals, evals[1:]):
    out['paired'][f'{b}_vs_{a}'] = _paired(outcomes[a], outcomes[b])
  return out


def _copy_probe(run_dir: str, rep: dict) -> float | None:
  """The pretraining's last copy probe: its curve, or the imported base's."""
  copy = rep['curves'].get('pretrain', {}).get('copy_nll')
  if copy:
    return copy[-1][1]
  base = figures.read_json(os.path.join(run_dir, 'pretrain', 'base.json'))
  if base:
    rep['base'] = {
        k: base.get(k) for k in ('command', 'step', 'params_sha256', 'final')
    }
  return (base or {}).get('final', {}).get('copy_nll')


def build(
    run_dir: str,
    evals: list[tuple[str, str]],
    variant: str,
    seen: tuple[str, str] | None = None,
    reach: Sequence[tuple[str, str, str]] = (),
    device_kind: str = '',
    variant_reason: str = '',
    phrasings: Sequence[tuple[str, str]] = (),
) -> dict:
  """The report dict of a run directory.

  The report stage's own record is left out: this is that stage running, so
  a record on file is an earlier run's. `phrasings` (label, stage) are the
  evaluations on held-out phrasings (`heldout_phrasings`).
  """
  records = {
      n: r
      for n, r in runner.load_records(run_dir).items()
      if n != stages_lib.REPORT_STAGE
  }
  outcomes = {
      label: figures.eval_outcomes(os.path.join(run_dir, stage))
      for label, stage in evals
  }
  rep = {
      'variant': variant,
      'device_kind': device_kind,
      'variant_reason': variant_reason,
      'run_dir': os.path.abspath(run_dir),
      'created_utc': datetime.datetime.now(datetime.timezone.utc).isoformat(),
      'pass_at_1': {},
      'paired': {},
      'stages': {n: round(r['seconds'], 2) for n, r in records.items()},
      # CPU seconds of each stage's process: less inflated by other load
      # on the machine than the wall-clock `stages`.
      'stage_cpu_seconds': {
          n: round(r.get('cpu_seconds', 0.0), 2) for n, r in records.items()
      },
      'curves': {},
      'tool_calls': {},
      'well_formed_first_call': {},
      'query_names_first_page': {},
      'relation_named': {},
  }
  tasks = {
      t['id']: t
      for name in ('heldout', 'heldout_phrasings')
      for t in figures.read_jsonl(
          os.path.join(run_dir, 'tasks', f'tasks.{name}.jsonl')
      )
  }
  rep['total_seconds'] = round(sum(rep['stages'].values()), 2)
  for label, stage in evals:
    rep['pass_at_1'][label] = {
        **stats.pass_at_1(outcomes[label]),
        'stage': stage,
    }
    rep['tool_calls'][label] = tool_calls(os.path.join(run_dir, stage))
    rep['well_formed_first_call'][label] = well_formed(
        os.path.join(run_dir, stage)
    )
    rep['query_names_first_page'][label] = query_names_first_page(
        os.path.join(run_dir, stage), tasks
    )
    rep['relation_named'][label] = relation_named(
        os.path.join(run_dir, stage), tasks
    )
  for (a, _), (b, _) in zip(evals, evals[1:]):
    rep['paired'][f'{b}_vs_{a}'] = {
        **stats.mcnemar(outcomes[a], outcomes[b]),
        'bootstrap_95': stats.paired_bootstrap(outcomes[a], outcomes[b]),
    }
  for name in figures.LOSS_CURVES:
    if name in records:
      rep['curves'][name] = figures.train_curve(os.path.join(run_dir, name))
  for name in figures.REWARD_CURVES:
    if name in records:
      rep['curves'][name] = figures.reward_curve(os.path.join(run_dir, name))
      horizon = figures.rl_horizon(os.path.join(run_dir, name))
      if horizon:
        rep.setdefault('rl_horizon', {})[name] = horizon
  funnel = figures.read_json(os.path.join(run_dir, 'tasks', 'funnel.json'))
  rep['tasks'] = funnel or {}
  if phrasings:
    rep['heldout_phrasings'] = heldout_phrasings(
        run_dir, phrasings, tasks, outcomes,
        rep['tasks'].get('tasks', {}).get('heldout_phrasing_ids', ()),
    )  # fmt: skip
  rep['verdict'] = verdict_lib.verdict(rep, _copy_probe(run_dir, rep))
  climb = figures.read_json(os.path.join(run_dir, 'climb_data', 'climb.json'))
  if climb:
    rep['climb'] = climb
  pool = figures.read_json(os.path.join(run_dir, 'rl_pool', 'pool.json'))
  if pool:
    rep['rl_pool'] = pool
  if seen:
    rep['rl_seen'] = rl_seen(run_dir, *seen)
  if reach:
    rep['rl_reach'] = {
        label: rl_seen(run_dir, sft, rl) for label, sft, rl in reach
    }
  collect = figures.read_json(os.path.join(run_dir, 'collect', 'manifest.json'))
  if collect:
    rep['tool_calls']['teacher'] = collect['summary']['tool_calls_histogram']
    rep['teacher'] = collect['teacher']
  rep['manifest'] = {
      'stages': {
          n: {
              k: r.get(k)
              for k in (
                  'hash',
                  'argv',
                  'figure',
                  'reused',
                  'log',
                  'fingerprint',
              )
          }
          for n, r in records.items()
      },
      'versions': _versions(),
  }
  return rep


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  evals = [tuple(e.split(':', 1)) for e in _EVALS.value]
  if _RL_SEEN.value and len(_RL_SEEN.value) != 2:
    raise app.UsageError(f'--rl_seen takes two stages: {_RL_SEEN.value}')
  seen = tuple(_RL_SEEN.value) if _RL_SEEN.value else None
  reach = [tuple(r.split(':')) for r in _RL_REACH.value]
  phrasings = [tuple(e.split(':', 1)) for e in _PHRASINGS.value]
  if any(len(p) != 2 for p in phrasings):
    raise app.UsageError(
        f'--phrasings takes label:stage entries: {_PHRASINGS.value}'
    )
  if any(len(r) != 3 for r in reach):
    raise app.UsageError(
        f'--rl_reach takes label:sft_stage:rl_stage entries: {_RL_REACH.value}'
    )
  rep = build(
      _RUN_DIR.value, evals, _VARIANT.value, seen, reach,
      _DEVICE_KIND.value, _VARIANT_REASON.value, phrasings,
  )  # fmt: skip
  os.makedirs(_WORKDIR.value, exist_ok=True)
  rep['plots'] = plots.write_all(rep, _WORKDIR.value)
  with open(os.path.join(_RUN_DIR.value, 'report.json'), 'w') as f:
    json.dump(rep, f, indent=1)
  with open(os.path.join(_RUN_DIR.value, 'report.md'), 'w') as f:
    f.write(report_md.render(rep, _RUN_DIR.value))
  print(json.dumps({k: v['value'] for k, v in rep['pass_at_1'].items()}))


if __name__ == '__main__':
  flags.mark_flags_as_required(['run_dir', 'workdir'])
  app.run(main)
