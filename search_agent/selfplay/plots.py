"""The self-play curves of a run: the seed's Figures 3 and 4, per update.

`selfplay_curves.png` beside metrics.jsonl: h_min of retained tasks
(Figure 3), the open-to-search ratio of both roles (Figure 4), and the
share of seeds retained with the mean rewards of both roles. Missing
values (no rollout of that kind in an update) are gaps.
"""

import json
import os

PLOT = 'selfplay_curves.png'


def _get(row, key, sub=None):
  v = row.get(key)
  if sub is not None:
    v = (v or {}).get(sub)
  return float('nan') if v is None else float(v)


def plot(metrics_path: str, out_path: str) -> None:
  """Draws the curves of a metrics.jsonl file's self-play rows."""
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use('Agg')
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  with open(metrics_path, encoding='utf-8') as f:
    rows = [json.loads(l) for l in f if l.strip()]
  rows = [r for r in rows if 'seeds_retained' in r]
  x = [r['update'] for r in rows]
  fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
  panels = (
      ('h_min of retained tasks', [('h_min_mean', None, 'h_min')]),
      ('open / search', [('open_search_ratio', 'proposer', 'proposer'),
                         ('open_search_ratio', 'solver', 'solver')]),
      ('seeds and rewards', [('seeds_retained', None, 'seeds retained'),
                             ('proposer_reward_mean', None, 'proposer r'),
                             ('solver_reward_mean', None, 'solver r')]),
  )  # fmt: skip
  for ax, (title, series) in zip(axes, panels):
    for key, sub, label in series:
      ax.plot(x, [_get(r, key, sub) for r in rows], marker='o', label=label)
    ax.set_title(title)
    ax.set_xlabel('update')
    ax.grid(alpha=0.3)
    ax.legend()
  fig.tight_layout()
  tmp = out_path + '.tmp.png'
  fig.savefig(tmp)
  plt.close(fig)
  os.replace(tmp, out_path)
