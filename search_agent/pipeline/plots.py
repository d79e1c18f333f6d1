"""The report's plots (PNG, matplotlib's Agg backend: no display needed)."""

import os

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top,wrong-import-position

# pylint: disable-next=wrong-import-position
from search_agent.pipeline import figures

_COLORS = ('#4c72b0', '#dd8452')


def _save(fig, out_dir: str, name: str) -> str:
  path = os.path.join(out_dir, name)
  fig.tight_layout()
  fig.savefig(path, dpi=90)
  plt.close(fig)
  return path


def pass_at_1(rep: dict, out_dir: str) -> str | None:
  """Held-out pass@1 per evaluation with Wilson intervals; held-out
  phrasings, when evaluated, beside held-out pages."""
  rows = rep['pass_at_1']
  if not rows:
    return None
  labels = list(rows)
  sets = {'held-out pages': rows}
  phrased = rep.get('heldout_phrasings', {}).get('pass_at_1')
  if phrased:
    sets['held-out phrasings'] = phrased
  fig, ax = plt.subplots(figsize=(5, 3.2))
  width = 0.8 / len(sets)
  for i, ((name, r), color) in enumerate(zip(sets.items(), _COLORS)):
    at = [j for j, k in enumerate(labels) if k in r]
    values = [r[labels[j]]['value'] for j in at]
    err = [
        [v - r[labels[j]]['ci_low'] for j, v in zip(at, values)],
        [r[labels[j]]['ci_high'] - v for j, v in zip(at, values)],
    ]
    xs = [j + (i - (len(sets) - 1) / 2) * width for j in at]
    n = r[labels[at[0]]]['n'] if at else 0
    ax.bar(xs, values, width=width, yerr=err, capsize=6, color=color,
           label=f'{name} (n={n})')  # fmt: skip
  ax.set_xticks(range(len(labels)), labels)
  ax.set_ylim(0, 1)
  ax.set_ylabel('pass@1 (Wilson 95%)')
  if phrased:
    ax.legend(fontsize=7)
    ax.set_title('held-out pass@1')
  else:
    ax.set_title(f'held-out pass@1 (n={rows[labels[0]]["n"]})')
  return _save(fig, out_dir, 'pass_at_1.png')


def losses(rep: dict, out_dir: str) -> str | None:
  curves = {k: v for k, v in rep['curves'].items() if k in figures.LOSS_CURVES}
  if not any(c['train'] for c in curves.values()):
    return None
  fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.2))
  axes = [axes] if len(curves) == 1 else list(axes)
  for ax, (name, c) in zip(axes, curves.items()):
    for split in ('train', 'val'):
      if c[split]:
        xs, ys = zip(*c[split])
        ax.plot(xs, ys, label=split, marker='o' if split == 'val' else None)
    ax.set_xlabel('update')
    ax.set_ylabel('NLL per loss token')
    ax.set_title(name)
    ax.legend()
  return _save(fig, out_dir, 'losses.png')


def rewards(rep: dict, out_dir: str) -> str | None:
  runs = {
      k: rep['curves'][k] for k in figures.REWARD_CURVES if rep['curves'].get(k)
  }
  if not runs:
    return None
  fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.2))
  axes = [axes] if len(runs) == 1 else list(axes)
  for ax, (name, curves) in zip(axes, runs.items()):
    for key, points in sorted(curves.items()):
      xs, ys = zip(*points)
      ax.plot(xs, ys, label=key)
    ax.set_xlabel('update')
    ax.set_title(f'{name} rewards')
    ax.legend(fontsize=7)
  return _save(fig, out_dir, 'rl_rewards.png')


def tool_calls(rep: dict, out_dir: str) -> str | None:
  rows = {k: v for k, v in rep['tool_calls'].items() if k != 'teacher'}
  if not rows:
    return None
  fig, ax = plt.subplots(figsize=(5, 3.2))
  width = 0.8 / len(rows)
  for i, (label, t) in enumerate(rows.items()):
    xs = [int(k) + i * width for k in t['histogram']]
    ax.bar(xs, list(t['histogram'].values()), width=width, label=label)
  ax.set_xlabel('tool calls per trajectory')
  ax.set_ylabel('trajectories')
  ax.legend(fontsize=7)
  return _save(fig, out_dir, 'tool_calls.png')


def stage_times(rep: dict, out_dir: str) -> str | None:
  if not rep['stages']:
    return None
  names = list(rep['stages'])
  fig, ax = plt.subplots(figsize=(5, 0.3 * len(names) + 1))
  ax.barh(names, [rep['stages'][n] for n in names], color='#55a868')
  ax.invert_yaxis()
  ax.set_xlabel('seconds')
  ax.set_title(f'stages ({rep["total_seconds"]:.0f} s in all)')
  return _save(fig, out_dir, 'stages.png')


def write_all(rep: dict, out_dir: str) -> dict[str, str]:
  """Every plot that has data; {name: path}."""
  out = {}
  for name, fn in (
      ('pass_at_1', pass_at_1),
      ('losses', losses),
      ('rl_rewards', rewards),
      ('tool_calls', tool_calls),
      ('stages', stage_times),
  ):
    path = fn(rep, out_dir)
    if path:
      out[name] = path
  return out
