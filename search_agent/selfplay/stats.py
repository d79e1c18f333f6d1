"""Self-play metrics: one JSON summary per seed, aggregated per iteration.

The iteration metrics (merged into each update's metrics.jsonl row):
  seeds:              seeds whose outcome arrived since the last update;
  seeds_retained:     share of them that passed the seed gate;
  filter_pass:        per filter, passed / candidates checked by it (None
                      when no candidate reached it);
  filter_reached:     per filter, candidates checked by it;
  tasks_passing:      candidates that passed all four filters;
  h_min_mean:         mean h_min of the retained seeds' chosen tasks with a
                      successful Solver rollout (the seed's Figure 3);
  open_search_ratio:  per role, total open calls / total search calls over
                      every rollout of the iteration (Figure 4);
  proposer_reward_mean, solver_reward_mean: mean final (OOP-penalized)
                      rewards over every rollout run (None without any);
  solver_success_rate: mean z over every Solver rollout.
"""

from typing import Any, Iterable, Mapping

from search_agent.rewards import searchmaster as sm
from search_agent.selfplay import seed_round


def seed_summary(out: seed_round.SeedOutcome) -> dict[str, Any]:
  """A JSON-able summary of one seed (kept in its group's meta)."""
  reached = {f: 0 for f in sm.FILTERS}
  passed = {f: 0 for f in sm.FILTERS}
  for o in out.filters:
    for f in o.reached:
      reached[f] += 1
      passed[f] += o.failed != f
  solvers = [p for group in out.solvers.values() for p in group]
  return {
      'seed': out.seed_id,
      'retained': out.retained,
      'filter_reached': reached,
      'filter_passed': passed,
      'failed_filters': [o.failed for o in out.filters],
      'h_min': out.h_min if out.retained else None,
      'proposer_rewards': [p.reward for p in out.proposer],
      'proposer_base_rewards': [p.base for p in out.proposer],
      'solver_rewards': [p.reward for p in solvers],
      'solver_correct': [p.correct for p in solvers],
      'opens': {
          'proposer': sum(p.n_open for p in out.proposer),
          'solver': sum(p.n_open for p in solvers),
      },
      'searches': {
          'proposer': sum(p.n_search for p in out.proposer),
          'solver': sum(p.n_search for p in solvers),
      },
      'tasks_passing': len(out.tasks),
      'chosen': out.chosen,
  }


def _mean(xs: list[float]) -> float | None:
  return sum(xs) / len(xs) if xs else None


def iteration_metrics(seeds: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
  """Aggregates seed summaries into the iteration's metrics (see above)."""
  seeds = list(seeds)
  reached = {f: sum(s['filter_reached'][f] for s in seeds) for f in sm.FILTERS}
  passed = {f: sum(s['filter_passed'][f] for s in seeds) for f in sm.FILTERS}
  ratio = {}
  for role in ('proposer', 'solver'):
    n_open = sum(s['opens'][role] for s in seeds)
    n_search = sum(s['searches'][role] for s in seeds)
    ratio[role] = n_open / n_search if n_search else None
  h = [s['h_min'] for s in seeds if s['retained'] and s['h_min'] is not None]
  return {
      'seeds': len(seeds),
      'seeds_retained': _mean([float(s['retained']) for s in seeds]),
      'filter_pass': {
          f: passed[f] / reached[f] if reached[f] else None for f in sm.FILTERS
      },
      'filter_reached': reached,
      'tasks_passing': sum(s['tasks_passing'] for s in seeds),
      'h_min_mean': _mean([float(x) for x in h]),
      'open_search_ratio': ratio,
      'proposer_reward_mean': _mean(
          [r for s in seeds for r in s['proposer_rewards']]
      ),
      'solver_reward_mean': _mean(
          [r for s in seeds for r in s['solver_rewards']]
      ),
      'solver_success_rate': _mean(
          [float(z) for s in seeds for z in s['solver_correct']]
      ),
  }
