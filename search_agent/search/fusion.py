"""Weighted reciprocal rank fusion of per-view rankings (open-recipe.md).

  RRF(d) = sum over views v of  w_v / (k + r_v(d))

with r_v(d) the 1-based rank of d in view v's list after passage → parent
mapping and deduplication (repeats are dropped here too, so ['a', 'a', 'b']
ranks b 2nd), and no contribution from a list that lacks d.
The seed uses k = 5 and weights 1.0 (doc), 0.75 (passage), 0.75 (title).

Ties in the fused score are broken deterministically: first by the best
(smallest) rank d has in any single view, then by doc_id (string order).
"""

from typing import Mapping, Sequence

DEFAULT_RRF_K = 5.0
DEFAULT_WEIGHTS = {'doc': 1.0, 'passage': 0.75, 'title': 0.75}


def weighted_rrf(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
  """Fuses per-view rankings with weighted RRF.

  Args:
    rankings: `{view: [doc_id, ...]}`, each best first. A doc_id repeated
      within one list is removed after its first occurrence before ranks
      are counted (the seed's "duplicates removed preserving order").
    weights: `{view: weight}`; every view in `rankings` must have one.
    k: The rank constant (> -1, so that rank 1 never divides by zero).

  Returns:
    `[(doc_id, score), ...]`, best first, ties broken by best single-view
    rank, then doc_id.

  Raises:
    ValueError: if a view has no weight, a weight is negative, or k <= -1.
  """
  if k <= -1:
    raise ValueError(f'RRF rank constant k must be > -1, got {k}')
  missing = sorted(set(rankings) - set(weights))
  if missing:
    raise ValueError(
        f'no fusion weight for views {missing}; weights cover'
        f' {sorted(weights)}'
    )
  scores: dict[str, float] = {}
  best_rank: dict[str, int] = {}
  for view, ranked in rankings.items():
    w = float(weights[view])
    if w < 0:
      raise ValueError(f'fusion weight for view {view!r} is negative: {w}')
    # Ranks count distinct doc_ids: repeats go first, order kept.
    for rank, doc_id in enumerate(dict.fromkeys(ranked), start=1):
      scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
      best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
  order = sorted(scores, key=lambda d: (-scores[d], best_rank[d], d))
  return [(d, scores[d]) for d in order]
