"""Anchor graphs from the corpus link graph (open recipe, Figure 5).

Seeds are sampled across entity types (round-robin over the types of
`entities.TYPES`, shuffled within each type by the run seed), then each
seed's neighbourhood is expanded breadth-first along link edges that have
source text (a sentence of the linking page mentions the target; for
2Wiki's derived links every edge has one, for XML dumps a link whose
anchor sentence is missing is skipped), in both directions, up to
`radius` hops and `max_nodes` pages. Subgraphs with fewer than
`min_nodes` pages are dropped.
"""

import dataclasses
import hashlib
import random
from typing import Any, Iterable, Sequence

from search_agent.corpus.record import Document


@dataclasses.dataclass(frozen=True, kw_only=True)
class AnchorConfig:
  """How anchor graphs are sampled.

  Attributes:
    num_seeds: Seed pages to sample (0 = every page, in type round-robin).
    radius: Link hops expanded from the seed.
    min_nodes: Smallest anchor graph kept.
    max_nodes: Expansion stops at this many pages.
    seed: Sampling seed.
  """

  num_seeds: int = 2000
  radius: int = 2
  min_nodes: int = 2
  max_nodes: int = 16
  seed: int = 0

  def __post_init__(self):
    if not 1 <= self.min_nodes <= self.max_nodes:
      raise ValueError(
          f'need 1 <= min_nodes ({self.min_nodes}) <= max_nodes'
          f' ({self.max_nodes})'
      )
    if self.radius < 1 or self.num_seeds < 0:
      raise ValueError('radius must be >= 1 and num_seeds >= 0')


@dataclasses.dataclass(frozen=True, kw_only=True)
class AnchorGraph:
  """A seed page and the pages reached from it.

  Attributes:
    id: Stable id ('ag-' + hash of the seed).
    seed: doc_id of the seed page.
    seed_type: Entity type of the seed.
    nodes: doc_ids, seed first, in expansion order.
    edges: (source, target) link edges among the nodes.
  """

  id: str
  seed: str
  seed_type: str
  nodes: tuple[str, ...]
  edges: tuple[tuple[str, str], ...]


class LinkGraph:
  """Out- and in-links of a corpus, restricted to edges with source text."""

  def __init__(self, docs: Sequence[Document]):
    known = {d.doc_id for d in docs}
    self.order = {d.doc_id: i for i, d in enumerate(docs)}
    self.out: dict[str, tuple[str, ...]] = {}
    self.inc: dict[str, list[str]] = {d.doc_id: [] for d in docs}
    for d in docs:
      targets = tuple(t for t in d.links if t in known and t != d.doc_id)
      self.out[d.doc_id] = targets
      for t in targets:
        self.inc[t].append(d.doc_id)

  def neighbours(self, doc_id: str) -> list[str]:
    both = dict.fromkeys(self.out[doc_id] + tuple(self.inc[doc_id]))
    return sorted(both, key=self.order.__getitem__)

  def num_edges(self) -> int:
    return sum(len(t) for t in self.out.values())


def sample_seeds(
    types: dict[str, str], config: AnchorConfig, type_order: Iterable[str]
) -> list[str]:
  """Seed doc_ids, round-robin across entity types (deterministic)."""
  rng = random.Random(config.seed)
  by_type: dict[str, list[str]] = {}
  for doc_id in sorted(types):
    by_type.setdefault(types[doc_id], []).append(doc_id)
  queues = []
  for kind in type_order:
    ids = by_type.get(kind, [])
    rng.shuffle(ids)
    queues.append(ids)
  limit = config.num_seeds or len(types)
  seeds: list[str] = []
  depth = 0
  while len(seeds) < limit and any(depth < len(q) for q in queues):
    for q in queues:
      if depth < len(q) and len(seeds) < limit:
        seeds.append(q[depth])
    depth += 1
  return seeds


def expand(graph: LinkGraph, seed: str, config: AnchorConfig) -> list[str]:
  """Breadth-first expansion of `seed` (seed first)."""
  nodes = [seed]
  seen = {seed}
  frontier = [seed]
  for _ in range(config.radius):
    nxt = []
    for node in frontier:
      for nb in graph.neighbours(node):
        if nb in seen:
          continue
        if len(nodes) >= config.max_nodes:
          return nodes
        seen.add(nb)
        nodes.append(nb)
        nxt.append(nb)
    frontier = nxt
  return nodes


def anchor_graphs(
    graph: LinkGraph,
    types: dict[str, str],
    config: AnchorConfig,
    type_order: Sequence[str],
) -> tuple[list[AnchorGraph], dict[str, Any]]:
  """Samples seeds, expands and filters; returns graphs and Figure 5 counts."""
  seeds = sample_seeds(types, config, type_order)
  kept: list[AnchorGraph] = []
  too_small = 0
  for seed in seeds:
    nodes = expand(graph, seed, config)
    if len(nodes) < config.min_nodes:
      too_small += 1
      continue
    members = set(nodes)
    edges = tuple((a, b) for a in nodes for b in graph.out[a] if b in members)
    digest = hashlib.sha1(seed.encode('utf-8')).hexdigest()[:12]
    kept.append(
        AnchorGraph(
            id=f'ag-{digest}',
            seed=seed,
            seed_type=types[seed],
            nodes=tuple(nodes),
            edges=edges,
        )
    )
  seed_types: dict[str, int] = {}
  for s in seeds:
    seed_types[types[s]] = seed_types.get(types[s], 0) + 1
  distinct_nodes = {n for g in kept for n in g.nodes}
  counts = {
      'corpus_pages': len(types),
      'link_edges_with_source_text': graph.num_edges(),
      'seeds': len(seeds),
      'seeds_by_type': seed_types,
      'anchor_graphs': len(kept),
      'dropped_too_small': too_small,
      'anchor_nodes_total': sum(len(g.nodes) for g in kept),
      'anchor_nodes_distinct': len(distinct_nodes),
      'anchor_edges_total': sum(len(g.edges) for g in kept),
  }
  return kept, counts
