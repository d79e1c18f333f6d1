"""Tuning the fusion on a held-out set: RRF k, view weights, per-view depth,
and (Lucene backend) BM25 k1/b per view.

The seed tunes its rank constant and fusion weights "on a local held-out
set". Here topics (a query and its gold doc_ids: the evidence pages of
synthesized tasks, or TREC topics and qrels) are split into train, dev and
test by a hash of a group key (tasks that share evidence stay together).
Each view is searched once per topic to the deepest depth any candidate
needs; candidates are then fused from those lists in Python, so a
candidate costs no search. Coordinate ascent over the grid maximizes train
recall@10 (ties: all-gold@10), the best `finalists` are re-scored on dev
and the best there is chosen; the test split is only reported.

BM25 k1 and b per view are tuned only on the Lucene backend (`tune_bm25`,
after the fusion: each candidate re-searches one view, since its lists
change): tantivy fixes them (k1 = 1.2, b = 0.75) in its scorer and
tantivy-py exposes no similarity setting. A fusion file that sets them is
refused by the other backends (`service.open_engine`).

The chosen values are a JSON file (`Fusion`) that `EngineConfig` takes
through `with_fusion` (serve.py's `engine.fusion_file`).
"""

import dataclasses
import hashlib
import json
import pathlib
from typing import Iterable, Mapping, Sequence

from search_agent.search import fusion as fusion_lib
from search_agent.search import parser
from search_agent.search import trec
from search_agent.search.engine import EngineConfig
from search_agent.search.engine import SearchEngine

BM25_NOTE = (
    'BM25 k1/b per view not tuned: tantivy fixes k1=1.2, b=0.75 in its scorer'
    ' and tantivy-py exposes no similarity setting (the lucene backend tunes'
    ' them)'
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fusion:
  """The tuned fusion settings (a JSON file).

  Attributes:
    rrf_k: RRF rank constant.
    weights: Weight per view.
    view_depth_factor: Per-view depth factor (depth = factor * k, at least
      the engine's `min_depth`).
    bm25: `{view: [k1, b]}` (Lucene backend only), or None for the
      backend's own (1.2, 0.75).
  """

  rrf_k: float
  weights: Mapping[str, float]
  view_depth_factor: Mapping[str, int]
  bm25: Mapping[str, Sequence[float]] | None = None

  @classmethod
  def of(cls, config: EngineConfig) -> 'Fusion':
    views = list(config.weights)
    return cls(
        rrf_k=config.rrf_k,
        weights=dict(config.weights),
        view_depth_factor={
            v: config.view_depth_factor.get(v, config.depth_factor)
            for v in views
        },
    )

  def write(self, path: str | pathlib.Path) -> None:
    pathlib.Path(path).write_text(
        json.dumps(dataclasses.asdict(self), indent=1) + '\n'
    )

  @classmethod
  def read(cls, path: str | pathlib.Path) -> 'Fusion':
    try:
      obj = json.loads(pathlib.Path(path).read_text())
      bm25 = obj.get('bm25')
      if bm25 is not None:
        bm25 = {v: [float(x) for x in kb] for v, kb in bm25.items()}
        if any(len(kb) != 2 for kb in bm25.values()):
          raise ValueError(f'bm25 wants [k1, b] per view, got {bm25}')
      return cls(
          rrf_k=float(obj['rrf_k']),
          weights={v: float(w) for v, w in obj['weights'].items()},
          view_depth_factor={
              v: int(f) for v, f in obj['view_depth_factor'].items()
          },
          bm25=bm25,
      )
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as e:
      raise ValueError(f'{path}: not a fusion file ({e!r})') from e


def with_fusion(config: EngineConfig, f: Fusion) -> EngineConfig:
  """`config` with the fusion settings of `f`."""
  return dataclasses.replace(
      config,
      rrf_k=f.rrf_k,
      weights=dict(f.weights),
      view_depth_factor=dict(f.view_depth_factor),
  )


def split_of(group: str, fractions: Sequence[float], seed: int = 0) -> str:
  """'train', 'dev' or 'test' for a group key, by a stable hash."""
  digest = hashlib.sha256(f'{seed}:{group}'.encode()).digest()
  u = int.from_bytes(digest[:8], 'big') / 2**64
  train, dev = fractions[0], fractions[0] + fractions[1]
  return 'train' if u < train else 'dev' if u < dev else 'test'


def view_cache(
    engine: SearchEngine, topics: Mapping[str, str], depth: int, batch=64
) -> dict[str, dict[str, list[str]]]:
  """Per topic, each view's doc_ids to `depth` (malformed queries: none)."""
  out, parsed = {}, {}
  for qid, text in topics.items():
    try:
      parsed[qid] = engine.parse(text)
    except parser.QueryError:
      out[qid] = {v: [] for v in engine.config.weights}
  qids = list(parsed)
  for i in range(0, len(qids), batch):
    chunk = qids[i : i + batch]
    ranks = engine.backend.view_rankings([parsed[q] for q in chunk], depth)
    out.update(zip(chunk, ranks))
  return out


def fused_ids(views, f: Fusion, k: int, min_depth: int) -> list[str]:
  """Top-k doc_ids of fusing cached view lists with `f` (no guard)."""
  cut = {
      v: ids[: max(min_depth, f.view_depth_factor[v] * k)]
      for v, ids in views.items()
  }
  return [d for d, _ in fusion_lib.weighted_rrf(cut, f.weights, f.rrf_k)[:k]]


def metrics(
    qrels: Mapping[str, Mapping[str, int]],
    ranked: Mapping[str, Sequence[str]],
    qids: Iterable[str],
    ks: Sequence[int] = (10, 100),
) -> dict[str, float]:
  """Macro recall@k and all-gold@k (share of topics with every gold)."""
  judged = {q: dict(qrels[q]) for q in qids}
  run = {q: [(d, 0.0) for d in ranked.get(q, ())] for q in judged}
  topics = [q for q, j in judged.items() if any(r > 0 for r in j.values())]
  out: dict[str, float] = {'topics': len(topics)}
  n = max(1, len(topics))
  for k in ks:
    per_query = trec.evidence_recall(judged, run, k).per_query
    out[f'recall@{k}'] = round(sum(per_query.values()) / n, 4)
    out[f'all_gold@{k}'] = round(
        sum(r == 1.0 for r in per_query.values()) / n, 4
    )
  return out


def _objective(cache, qrels, qids, f: Fusion, k: int, min_depth: int):
  ranked = {q: fused_ids(cache[q], f, k, min_depth) for q in qids}
  m = metrics(qrels, ranked, qids, ks=(k,))
  return m[f'recall@{k}'], m[f'all_gold@{k}']


def _moves(f: Fusion, grid) -> Iterable[Fusion]:
  """Every one-parameter change of `f` within the grid."""
  for value in grid['rrf_k']:
    yield dataclasses.replace(f, rrf_k=float(value))
  for view, values in grid['weights'].items():
    for value in values:
      yield dataclasses.replace(f, weights={**f.weights, view: float(value)})
  for view in f.view_depth_factor:
    for value in grid['depth_factor']:
      yield dataclasses.replace(
          f, view_depth_factor={**f.view_depth_factor, view: int(value)}
      )


def tune(
    cache, qrels, train, dev, start: Fusion, grid, *, k=10, min_depth=20,
    rounds=3, finalists=5,
) -> tuple[Fusion, list[dict]]:  # fmt: skip
  """Coordinate ascent on train, the finalists re-scored on dev.

  Returns:
    (chosen fusion, rows `{fusion, train, dev}` of the finalists and the
    start, each score (recall@k, all-gold@k)); dev ties go to the better
    train score.
  """
  score = lambda f, qids: _objective(cache, qrels, qids, f, k, min_depth)
  seen = {json.dumps(dataclasses.asdict(start), sort_keys=True): start}
  best, best_score = start, score(start, train)
  scored = [(best_score, start)]
  for _ in range(rounds):
    improved = False
    for cand in _moves(best, grid):
      key = json.dumps(dataclasses.asdict(cand), sort_keys=True)
      if key in seen or sum(cand.weights.values()) <= 0:
        continue
      seen[key] = cand
      s = score(cand, train)
      scored.append((s, cand))
      if s > best_score:
        best, best_score, improved = cand, s, True
    if not improved:
      break
  scored.sort(key=lambda x: x[0], reverse=True)
  top = [f for _, f in scored[:finalists]]
  top += [start] if start not in top else []
  rows = [
      {'fusion': dataclasses.asdict(f), 'train': score(f, train),
       'dev': score(f, dev)}
      for f in top
  ]  # fmt: skip
  chosen = max(range(len(rows)), key=lambda i: (rows[i]['dev'], -i))
  return Fusion(**rows[chosen]['fusion']), rows


def tune_bm25(
    search_view, cache, qrels, train, dev, fusion: Fusion, grid, *, k=10,
    min_depth=20, rounds=2, default=(1.2, 0.75),
) -> tuple[dict[str, list[float]], list[dict]]:  # fmt: skip
  """BM25 (k1, b) per view by coordinate ascent on train, `fusion` fixed.

  Args:
    search_view: `(view, (k1, b)) -> {qid: doc_ids}`, that view's lists for
      every topic in `cache` under those parameters (the other views keep
      theirs).
    cache: `view_cache` lists under `default` for every view.
    grid: `{'k1': values, 'b': values}`; each view tries every pair.
    default: The parameters `cache` was searched with.

  Returns:
    (`{view: [k1, b]}`, rows `{bm25, train, dev}` for the default and the
    tuned choice). The tuned choice is kept only when it beats the default
    on dev (ties: the default).
  """
  views = list(fusion.weights)
  chosen = {v: tuple(default) for v in views}
  lists = {(v, tuple(default)): {q: r[v] for q, r in cache.items()}
           for v in views}  # fmt: skip

  def lists_of(v, kb):
    if (v, kb) not in lists:
      lists[(v, kb)] = search_view(v, kb)
    return lists[(v, kb)]

  def score(params, qids):
    mixed = {q: {v: lists_of(v, params[v])[q] for v in views} for q in qids}
    return _objective(mixed, qrels, qids, fusion, k, min_depth)

  best = score(chosen, train)
  for _ in range(rounds):
    improved = False
    for v in views:
      for kb in ((float(a), float(b)) for a in grid['k1'] for b in grid['b']):
        cand = {**chosen, v: kb}
        s = score(cand, train)
        if s > best:
          chosen, best, improved = cand, s, True
    if not improved:
      break
  start = {v: tuple(default) for v in views}
  rows = [
      {'bm25': {v: list(p[v]) for v in views}, 'train': score(p, train),
       'dev': score(p, dev)}
      for p in (start, chosen)
  ]  # fmt: skip
  pick = rows[1] if rows[1]['dev'] > rows[0]['dev'] else rows[0]
  return pick['bm25'], rows


def evaluate(
    engine: SearchEngine,
    topics: Mapping[str, str],
    qrels,
    qids: Sequence[str],
    ks: Sequence[int] = (10, 100),
    batch: int = 64,
) -> dict[str, float]:
  """Metrics of the engine's real fused search (views searched to each
  k's own depth), before the leakage guard and snippets."""
  ok = {}
  for q in qids:
    try:
      ok[q] = engine.parse(topics[q])
    except parser.QueryError:
      pass
  out = {}
  for k in ks:
    ranked, keys = {}, list(ok)
    for i in range(0, len(keys), batch):
      chunk = keys[i : i + batch]
      fused = engine.fused_rankings([ok[q] for q in chunk], k)
      ranked.update((q, [d for d, _ in f[:k]]) for q, f in zip(chunk, fused))
    m = metrics(qrels, ranked, qids, ks=(k,))
    out.update(m)
  return out
