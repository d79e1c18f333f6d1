"""Anchor graphs and evidence paths on the bundled corpus's link graph."""

import collections

from search_agent.synthesis import entities
from search_agent.synthesis import evidence_paths as paths_lib
from search_agent.synthesis import graph as graph_lib
from search_agent.synthesis import schema


def _anchors(prepared, **kw):
  docs = list(prepared.docs.values())
  lg = graph_lib.LinkGraph(docs)
  config = graph_lib.AnchorConfig(**kw)
  return lg, graph_lib.anchor_graphs(lg, prepared.types, config, entities.TYPES)


def test_seeds_round_robin_over_types(prepared):
  config = graph_lib.AnchorConfig(num_seeds=70)
  seeds = graph_lib.sample_seeds(prepared.types, config, entities.TYPES)
  assert len(seeds) == len(set(seeds)) == 70
  first = [prepared.types[s] for s in seeds[: len(entities.TYPES)]]
  assert sorted(first) == sorted(entities.TYPES)
  assert seeds == graph_lib.sample_seeds(prepared.types, config, entities.TYPES)


def test_anchor_graphs_are_bounded_link_neighbourhoods(prepared):
  lg, (anchors, counts) = _anchors(prepared, num_seeds=300, max_nodes=10)
  assert counts['seeds'] == 300
  assert counts['anchor_graphs'] + counts['dropped_too_small'] == 300
  for ag in anchors:
    assert ag.nodes[0] == ag.seed
    assert 2 <= len(ag.nodes) <= 10
    # Every node is within `radius` (2) undirected link hops of the seed.
    dist = {ag.seed: 0}
    frontier = [ag.seed]
    for d in (1, 2):
      frontier = [
          n for f in frontier for n in lg.neighbours(f) if n not in dist
      ]
      for n in frontier:
        dist.setdefault(n, d)
    assert set(ag.nodes) <= set(dist)
    for a, b in ag.edges:
      assert b in prepared.docs[a].links


def test_paths_chain_through_object_pages(prepared):
  seen = set()
  hops = collections.Counter()
  anchors = {}
  for g in prepared.graphs:
    for p in g.paths:
      hops[p.hops] += 1
      key = tuple((c.subject, c.relation) for c in p.claims)
      assert key not in seen, 'a path is used by one evidence graph only'
      seen.add(key)
      assert paths_lib.answer_key(p) == paths_lib.answer_key(g.paths[0])
      for a, b in zip(p.claims, p.claims[1:]):
        assert a.relation in schema.ENTITY_RELATIONS
        assert a.object_doc == b.subject
      assert len(set(p.pages)) == len(p.pages)
  assert set(hops) <= {1, 2, 3}
  assert hops[1] > 1000 and hops[2] > 300


def test_paths_use_only_functional_claims(prepared):
  objects = collections.defaultdict(set)
  for doc_id, cs in prepared.claims.items():
    for c in cs:
      objects[(doc_id, c.relation)].add(c.object)
  for g in prepared.graphs[:2000]:
    for p in g.paths:
      for c in p.claims:
        assert len(objects[(c.subject, c.relation)]) == 1


def test_paths_from_walks_inside_members(prepared):
  fc = paths_lib.functional_claims(prepared.claims)
  start = 'The_Tender_Years'
  inside = paths_lib.paths_from(
      start, fc, {start, 'Harold_D._Schuster'}, max_hops=3
  )
  outside = paths_lib.paths_from(start, fc, {start}, max_hops=3)
  assert max(p.hops for p in inside) == 2
  assert {p.hops for p in outside} == {1}
  two = [p for p in inside if p.hops == 2]
  assert all(p.claims[0].relation == 'director' for p in two)
  assert {p.claims[1].relation for p in two} >= {'date_of_birth'}
