"""Per-update RL metrics: JSONL, TensorBoard, console, reward-curve plot.

`metrics.jsonl` gets one JSON object per optimizer update (`update` and
`step` are both the update index, 1-based; `policy_version` the version the
update produced). Scalars also go to TensorBoard under `tb/`, a progress line
to the console, and `reward_curves.png` is redrawn beside them (total,
outcome and claim reward per update, as the seed's Figure 13). On resume
from version s the file is rolled back to updates <= s (shared with SFT).
"""

import json
import os
import time
from typing import Any, Mapping, Sequence

from absl import logging
import numpy as np
import tensorboardX

from search_agent.train.rl import advantages as adv_lib
from search_agent.train.sft import metrics as sft_metrics

PLOT = 'reward_curves.png'
CURVES = (
    ('reward_mean', 'total reward r'),
    ('outcome_reward_mean', 'outcome y'),
    ('claim_reward_mean', 'claim coverage c'),
)


def group_summary(groups: Sequence[Any]) -> dict[str, float]:
  """Reward means over every trajectory of `groups`."""
  trajs = [t for g in groups for t in g.trajectories]
  mean = lambda xs: float(np.mean(xs)) if xs else 0.0  # pylint: disable=g-long-lambda
  secs = [g.meta.get('seconds', 0.0) for g in groups]
  segs = [s for t in trajs for s in t.segments]
  computed = sum(len(s.token_ids) for s in segs)
  trained = sum(int(np.sum(np.asarray(s.loss_mask))) for s in segs)
  return {
      # The context window's slides (agent.token_record): each trajectory
      # trains as its segments; the learner computes every segment's prompt
      # again (re-prefill), so computed / trained tokens is their overhead.
      'trajectories_slid': sum(t.slid for t in trajs),
      'segments_per_trajectory': len(segs) / max(len(trajs), 1),
      'reprefill_overhead': computed / max(trained, 1),
      'reward_mean': mean([t.reward for t in trajs]),
      'outcome_reward_mean': mean([t.correct for t in trajs]),
      'claim_reward_mean': mean([t.coverage for t in trajs]),
      'trajectories': len(trajs),
      'dropped_inexact': sum(g.meta.get('dropped_inexact', 0) for g in groups),
      'group_seconds_p50': float(np.median(secs)) if secs else 0.0,
      'group_seconds_max': float(np.max(secs)) if secs else 0.0,
  }


_ROLE_COUNTERS = (
    'policy_calls', 'policy_failed_calls', 'policy_http_requests',
    'policy_http_retries', 'judge_calls', 'judge_failed_calls',
    'judge_parse_failures', 'judge_parse_retries', 'judge_http_retries',
)  # fmt: skip


def signal_summary(
    groups: Sequence[Any], adv_cfg: adv_lib.AdvantageConfig
) -> dict[str, Any]:
  """What the update learned from: groups with a non-zero advantage, and
  the trained tokens (loss mask 1, non-zero advantage) per policy version
  that sampled them ({'0': n, '1': m, ...}; -1 = no version recorded).

  A run whose later updates train no token of a version >= 1 never learned
  from its own updated policy (the sampler did not load the pushed weights,
  or only stale groups were trained).
  """
  with_signal, by_version = 0, {}
  for g in groups:
    adv = adv_lib.group_advantages(g.rewards, adv_cfg)
    with_signal += adv_lib.has_signal(adv, adv_cfg)
    for t, a in zip(g.trajectories, adv):
      if abs(a) <= adv_cfg.zero_atol:
        continue
      for s in t.segments:
        v = np.asarray(s.versions)[np.asarray(s.loss_mask, dtype=bool)]
        for version, n in zip(*np.unique(v, return_counts=True)):
          by_version[int(version)] = by_version.get(int(version), 0) + int(n)
  return {
      'groups_with_advantage': with_signal,
      'trained_tokens_by_version': {
          str(v): by_version[v] for v in sorted(by_version)
      },
  }


def update_record(
    *,
    version,
    groups,
    used,
    dropped,
    sums,
    grad_norm,
    busy_s,
    wall_s,
    max_token_age,
    unrouted_rows=0,
    adv_cfg=adv_lib.AdvantageConfig(),
    advantage_groups=None,
) -> dict[str, Any]:
  """The metrics.jsonl object of one update (`sums`: loss.finalize's).

  `unrouted_rows`: trajectories trained without a routing record to replay
  (the router chose their experts; learner.pack_update). `adv_cfg`: the
  advantages the update used (signal_summary) over `advantage_groups`
  (the GRPO groups the update's `groups` hold; default: the groups).
  """
  ages = np.asarray(sums['age_hist']).astype(int).tolist()
  gen_tokens = sum(
      int(np.sum(np.asarray(s.loss_mask)))
      for g in groups
      for t in g.trajectories
      for s in t.segments
  )
  return {
      'update': version,
      'policy_version': version,
      **group_summary(groups),
      **signal_summary(
          groups if advantage_groups is None else advantage_groups, adv_cfg
      ),
      'groups_used': len(used),
      'groups_dropped': len(dropped),
      'loss': float(sums['loss']),
      'eligible_tokens': float(sums['eligible_tokens']),
      'icepop_mask_rate': float(sums['icepop_mask_rate']),
      'logprob_gap': float(sums['logprob_gap']),
      'logprob_abs_gap': float(sums['logprob_abs_gap']),
      'token_age_hist': ages,
      'tokens_past_age_limit': int(sum(ages[max_token_age + 1 :])),
      # Partial rollouts (partial.py): requests held/aborted, and rollouts
      # whose tokens splice several versions (truncated IS corrects them;
      # under 'tis' icepop_mask_rate is the share of weights over the cap).
      'interruptions': sum(g.meta.get('interruptions', 0) for g in groups),
      'spliced_rollouts': sum(
          g.meta.get('spliced_rollouts', 0) for g in groups
      ),
      # Rollout servers: session tokens the weight pushes recomputed, and
      # sessions released by finished trajectories (server_policy.py).
      'push_recomputed_tokens': sum(
          g.meta.get('push_recomputed_tokens', 0) for g in groups
      ),
      'released_sessions': sum(
          g.meta.get('released_sessions', 0) for g in groups
      ),
      # The 'openai' policy (server_policy.role_counters) and the LLM
      # judges (scoring.LLMScorer.counters): calls, failures, retries.
      **{
          k: sum(g.meta.get(k, 0) for g in groups)
          for k in _ROLE_COUNTERS
      },
      'unrouted_rows': unrouted_rows,
      'grad_norm': grad_norm,
      'update_seconds': wall_s,
      'learner_busy_seconds': busy_s,
      'learner_utilization': busy_s / wall_s if wall_s > 0 else 0.0,
      'tokens_per_s': gen_tokens / wall_s if wall_s > 0 else 0.0,
      'time': time.time(),
  }  # fmt: skip


class RLMetricsWriter:
  """Writes one record per update to every sink."""

  def __init__(self, workdir: str, total_updates: int, resume_update: int):
    os.makedirs(workdir, exist_ok=True)
    self.workdir = workdir
    self.path = os.path.join(workdir, 'metrics.jsonl')
    sft_metrics.rollback(self.path, resume_update)
    self._tb = tensorboardX.SummaryWriter(
        os.path.join(workdir, 'tb'), purge_step=resume_update + 1
    )
    self._total = total_updates

  def write(self, record: Mapping[str, Any]) -> None:
    rec = dict(record)
    rec['step'] = rec['update']
    with open(self.path, 'a', encoding='utf-8') as f:
      f.write(json.dumps(rec) + '\n')
      f.flush()
      os.fsync(f.fileno())
    for k, v in rec.items():
      if isinstance(v, (int, float)) and not isinstance(v, bool):
        self._tb.add_scalar(f'rl/{k}', float(v), rec['update'])
    self._tb.flush()
    logging.info(
        'update %d/%d v%d reward %.3f (y %.3f c %.3f) groups %d dropped %d'
        ' mask %.3f gap %.2e loss %.4g util %.2f %.1fs',
        rec['update'], self._total, rec['policy_version'],
        rec['reward_mean'], rec['outcome_reward_mean'],
        rec['claim_reward_mean'], rec['groups_used'], rec['groups_dropped'],
        rec['icepop_mask_rate'], rec['logprob_gap'], rec['loss'],
        rec['learner_utilization'], rec['update_seconds'],
    )  # fmt: skip
    plot(self.path, os.path.join(self.workdir, PLOT))

  def close(self) -> None:
    self._tb.close()


def plot(metrics_path: str, out_path: str) -> None:
  """Draws the reward curves of a metrics.jsonl file."""
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use('Agg')
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  with open(metrics_path, encoding='utf-8') as f:
    rows = [json.loads(line) for line in f if line.strip()]
  fig, ax = plt.subplots(figsize=(6, 3.5))
  x = [r['update'] for r in rows]
  for key, label in CURVES:
    ax.plot(x, [r[key] for r in rows], marker='o', label=label)
  ax.set_xlabel('update')
  ax.set_ylabel('mean reward')
  ax.set_ylim(-0.02, 1.02)
  ax.legend()
  ax.grid(alpha=0.3)
  fig.tight_layout()
  tmp = out_path + '.tmp.png'
  fig.savefig(tmp)
  plt.close(fig)
  os.replace(tmp, out_path)
