"""Reads a finished stage's outputs: its key figure and its curves.

Each reader takes the stage's workdir and returns what the console line and
the report show; a missing or unreadable output gives an empty figure, never
an exception (the stage's own exit status says whether it worked).
"""

import json
import os
from typing import Any, Callable

# Stages with a loss curve (train.sft) and with reward curves (train.rl.run).
LOSS_CURVES = ('pretrain', 'sft', 'climb_sft')
REWARD_CURVES = ('rl', 'climb_rl')


def read_json(path: str) -> Any:
  try:
    with open(path, encoding='utf-8') as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def read_jsonl(path: str) -> list[dict[str, Any]]:
  """Every line that parses (a torn last line is skipped)."""
  out = []
  try:
    with open(path, encoding='utf-8') as f:
      for line in f:
        try:
          out.append(json.loads(line))
        except ValueError:
          continue
  except OSError:
    pass
  return out


def eval_outcomes(stage_dir: str) -> dict[str, bool]:
  """Latest grade per task of an eval workdir (errors count as wrong)."""
  out = {}
  for r in read_jsonl(os.path.join(stage_dir, 'results.jsonl')):
    out[str(r['task_id'])] = bool(r.get('correct'))
  return out


def _count_lines(path: str) -> int:
  try:
    with open(path, encoding='utf-8') as f:
      return sum(1 for line in f if line.strip())
  except OSError:
    return 0


def index_figure(d: str) -> str:
  m = read_json(os.path.join(d, 'index', 'manifest.json')) or {}
  counts = m.get('counts') or m.get('views') or {}
  docs = counts.get('doc') if isinstance(counts, dict) else None
  return f'{docs} documents' if docs else 'index built'


def tasks_figure(d: str) -> str:
  train = _count_lines(os.path.join(d, 'tasks.train.jsonl'))
  held = _count_lines(os.path.join(d, 'tasks.heldout.jsonl'))
  rl = _count_lines(os.path.join(d, 'tasks.rl.jsonl'))
  if rl:
    return f'{train} train / {rl} RL / {held} held-out tasks'
  return f'{train} train / {held} held-out tasks'


def collect_figure(d: str) -> str:
  s = (read_json(os.path.join(d, 'manifest.json')) or {}).get('summary', {})
  n = s.get('trajectories', 0)
  return (
      f'{n} rollouts, {s.get("answer_matches", 0)} correct,'
      f' {s.get("with_invalid_turn", 0)} with a recovered call'
  )


def filter_figure(d: str) -> str:
  r = read_json(os.path.join(d, 'report.json')) or {}
  out, inp = r.get('output', {}), r.get('input', {})
  return f'kept {out.get("trajectories", 0)} of {inp.get("trajectories", 0)}'


def train_curve(d: str) -> dict[str, list]:
  """{'train': [(step, nll)], 'val': [(step, nll)], 'tokens_per_s': [...],
  'copy_nll': [(step, nats)] (pretraining's copy probe, when recorded)}."""
  rows = read_jsonl(os.path.join(d, 'metrics.jsonl'))
  out = {'train': [], 'val': [], 'tokens_per_s': [], 'copy_nll': []}
  for r in rows:
    if 'nll' not in r:
      continue
    split = 'val' if r.get('split') == 'val' else 'train'
    if split == 'val' and 'copy_nll' in r:
      out['copy_nll'].append((r['step'], r['copy_nll']))
    out[split].append((r['step'], r['nll']))
    if split == 'train' and 'tokens_per_s' in r:
      out['tokens_per_s'].append((r['step'], r['tokens_per_s']))
  return out


def train_figure(d: str) -> str:
  c = train_curve(d)
  if not c['train']:
    return 'no updates recorded'
  step, nll = c['train'][-1]
  text = f'{step} updates, train nll {nll:.3f}'
  if c['val']:
    text += f', val nll {c["val"][-1][1]:.3f}'
  rates = sorted(v for _, v in c['tokens_per_s'][1:])  # skip the compile
  if rates:
    text += f', {rates[len(rates) // 2]:.0f} tok/s'
  return text


def reward_curve(d: str) -> dict[str, list]:
  """Every numeric metric of an RL run whose name mentions reward, by step."""
  out: dict[str, list] = {}
  for r in read_jsonl(os.path.join(d, 'metrics.jsonl')):
    step = r.get('step', r.get('update'))
    if step is None:
      continue
    for key, value in r.items():
      if 'reward' in key and isinstance(value, (int, float)):
        out.setdefault(key, []).append((step, value))
  return out


def rl_horizon(d: str) -> dict[str, Any] | None:
  """What an RL run trained at its horizon, summed over its updates: the
  trajectories, those whose context window slid (trained as several token
  segments), their segments, and the rollouts dropped as inexact."""
  rows = [
      r
      for r in read_jsonl(os.path.join(d, 'metrics.jsonl'))
      if 'trajectories_slid' in r
  ]
  if not rows:
    return None
  trajs = sum(int(r.get('trajectories', 0)) for r in rows)
  segments = sum(
      r.get('segments_per_trajectory', 1.0) * r.get('trajectories', 0)
      for r in rows
  )
  return {
      'updates': len(rows),
      'trajectories': trajs,
      'slid': sum(int(r['trajectories_slid']) for r in rows),
      'segments_per_trajectory': segments / trajs if trajs else 0.0,
      'dropped_inexact': sum(int(r.get('dropped_inexact', 0)) for r in rows),
  }


def rl_figure(d: str) -> str:
  curves = reward_curve(d)
  if not curves:
    return f'{len(read_jsonl(os.path.join(d, "metrics.jsonl")))} metric rows'
  key = sorted(curves, key=lambda k: (k != 'reward_mean', k))[0]
  points = curves[key]
  values = [v for _, v in points]
  if len(values) < 4:
    return f'{points[-1][0]} updates, {key} {values[-1]:.3f}'
  q = len(values) // 4
  return (
      f'{points[-1][0]} updates, {key} {sum(values) / len(values):.3f}'
      f' (first quarter {sum(values[:q]) / q:.3f}, last'
      f' {sum(values[-q:]) / q:.3f})'
  )


def eval_figure(d: str) -> str:
  s = (read_json(os.path.join(d, 'report.json')) or {}).get('summary', {})
  if s.get('pass_at_1') is None:
    return 'no graded questions'
  ci = s.get('ci', {})
  return (
      f'pass@1 {s["pass_at_1"]:.3f} [{ci.get("low", 0):.3f},'
      f' {ci.get("high", 0):.3f}] on {s.get("graded", s.get("questions"))}'
  )


def tokenizer_figure(d: str) -> str:
  vocab = (read_json(os.path.join(d, 'tokenizer.json')) or {}).get('model', {})
  return f'{len(vocab.get("vocab", {}))} BPE ids'


def split_figure(d: str) -> str:
  s = read_json(os.path.join(d, 'split.json')) or {}
  return f'{s.get("train", 0)} train / {s.get("val", 0)} val demonstrations'


def climb_figure(d: str) -> str:
  m = read_json(os.path.join(d, 'climb.json')) or {}
  picked = m.get('train_selected', 0)
  return (
      f'{picked} RL rollouts in the pass band +'
      f' {m.get("train", 0) - picked} demonstrations'
  )


def pool_figure(d: str) -> str:
  m = read_json(os.path.join(d, 'pool.json')) or {}
  return (
      f'{m.get("kept", 0)} RL tasks ({m.get("kept_answered", 0)} answered'
      f' of {m.get("probed", 0)} probed)'
  )


def seen_figure(d: str) -> str:
  m = read_json(os.path.join(d, 'seen.json')) or {}
  figure = f'{m.get("tasks", 0)} tasks RL trained on'
  if 'siblings' in m:
    figure += f', {m["siblings"]} siblings, {m["untouched"]} untouched'
  return figure


def base_figure(d: str) -> str:
  """The imported base's step, size and final copy probe (base.json)."""
  m = read_json(os.path.join(d, 'base.json')) or {}
  final = m.get('final', {})
  text = f'imported base: step {m.get("step", "?")}'
  if 'copy_nll' in final:
    text += f', copy_nll {final["copy_nll"]:.2f}'
  return text + f', sha256 {m.get("params_sha256", "?")[:12]} checked'


def report_figure(d: str) -> str:
  return f'wrote {os.path.join(os.path.dirname(d), "report.md")}'


FIGURES: dict[str, Callable[[str], str]] = {
    'index.build': index_figure,
    'search_agent.synthesis.run': tasks_figure,
    'search_agent.pipeline.collect': collect_figure,
    'search_agent.filtering.run': filter_figure,
    'search_agent.train.sft': train_figure,
    'search_agent.train.rl.run': rl_figure,
    'eval.run': eval_figure,
    'search_agent.pipeline.report': report_figure,
    'search_agent.pipeline.train_tokenizer': tokenizer_figure,
    'search_agent.pipeline.split': split_figure,
    'search_agent.pipeline.climb_data': climb_figure,
    'search_agent.pipeline.rl_pool': pool_figure,
    'search_agent.pipeline.rl_seen': seen_figure,
    'search_agent.pipeline.import_base': base_figure,
}


def key_figure(module: str, workdir: str) -> str:
  reader = FIGURES.get(module)
  return reader(workdir) if reader else ''
