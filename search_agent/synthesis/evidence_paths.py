"""Evidence graphs: answers in an anchor graph and the paths that reach them.

Open recipe, "From Evidence Graphs to Search Tasks": candidate answers are
chosen anywhere in the anchor graph; the pages whose claims relate to an
answer directly are found, then multi-hop paths through them. Here a path
is a chain of claims start → ... → answer where every hop before the last
is an entity relation whose object page is in the anchor graph, and the
next claim is read from that page. Only functional claims are used (a
page with one object for that relation), so each path's answer is unique
given its start. Paths are grouped by answer (an answer page, or for a
value the page and relation it is read from) into evidence graphs; a
path belongs to the first anchor graph (in sampling order) that holds it,
so no question is proposed twice.
"""

import hashlib
from typing import Any, Container, Iterable, Sequence

from search_agent.synthesis import schema
from search_agent.synthesis.graph import AnchorGraph
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Path


def functional_claims(
    claims: dict[str, list[PageClaim]],
) -> dict[str, list[PageClaim]]:
  """Per page, the claims whose relation has exactly one object there."""
  out = {}
  for doc_id, cs in claims.items():
    objects: dict[str, set[str]] = {}
    for c in cs:
      objects.setdefault(c.relation, set()).add(c.object)
    out[doc_id] = [c for c in cs if len(objects[c.relation]) == 1]
  return out


def paths_from(
    start: str,
    claims: dict[str, list[PageClaim]],
    members: set[str],
    max_hops: int,
    hop_relations: Container[str] | None = schema.ENTITY_RELATIONS,
) -> list[Path]:
  """Every path of 1..max_hops claims from `start` inside `members`.

  A hop continues through a claim's object page when its relation is in
  `hop_relations` (None: any claim with an object page, for LLM claims).
  """
  out: list[Path] = []

  def walk(page: str, chain: tuple[PageClaim, ...], visited: set[str]):
    for c in claims.get(page, ()):
      if c.object_doc in visited:
        continue
      path = chain + (c,)
      out.append(Path(claims=path))
      nxt = c.object_doc
      if (
          len(path) < max_hops
          and nxt in members
          and (hop_relations is None or c.relation in hop_relations)
      ):
        walk(nxt, path, visited | {nxt})

  walk(start, (), {start})
  return out


def _path_key(p: Path) -> tuple:
  return tuple((c.subject, c.relation) for c in p.claims)


def answer_key(p: Path) -> str:
  """An answer page, else the page and relation a value is read from."""
  last = p.claims[-1]
  return last.object_doc or f'{last.subject}#{last.relation}'


def evidence_graphs(
    anchors: Sequence[AnchorGraph],
    claims: dict[str, list[PageClaim]],
    max_hops: int = 3,
    min_hops: int = 1,
    hop_relations: Container[str] | None = schema.ENTITY_RELATIONS,
) -> tuple[list[EvidenceGraph], dict[str, Any]]:
  """Evidence graphs of all anchor graphs, each path used once."""
  fclaims = functional_claims(claims)
  taken: set[tuple] = set()
  graphs: list[EvidenceGraph] = []
  hop_counts: dict[int, int] = {}
  for anchor in anchors:
    members = set(anchor.nodes)
    by_answer: dict[str, list[Path]] = {}
    for start in anchor.nodes:
      for p in paths_from(start, fclaims, members, max_hops, hop_relations):
        key = _path_key(p)
        if p.hops < min_hops or key in taken:
          continue
        if p.answer_doc and p.answer_doc not in members:
          continue
        taken.add(key)
        by_answer.setdefault(answer_key(p), []).append(p)
    for key, ps in by_answer.items():
      ps.sort(key=lambda p: (p.hops, _path_key(p)))
      for p in ps:
        hop_counts[p.hops] = hop_counts.get(p.hops, 0) + 1
      digest = hashlib.sha1(f'{anchor.id}|{key}'.encode()).hexdigest()[:12]
      graphs.append(
          EvidenceGraph(
              id=f'eg-{digest}',
              anchor=anchor.id,
              answer=ps[0].answer,
              answer_doc=ps[0].answer_doc,
              paths=tuple(ps),
          )
      )
  counts = {
      'evidence_graphs': len(graphs),
      'paths': sum(hop_counts.values()),
      'paths_by_hops': {str(k): v for k, v in sorted(hop_counts.items())},
      'claims_total': sum(len(v) for v in claims.values()),
      'claims_functional': sum(len(v) for v in fclaims.values()),
      'claims_with_object_page': sum(
          1 for v in claims.values() for c in v if c.object_doc
      ),
  }
  return graphs, counts


def relation_counts(claims: Iterable[PageClaim]) -> dict[str, int]:
  out: dict[str, int] = {}
  for c in claims:
    out[c.relation] = out.get(c.relation, 0) + 1
  return dict(sorted(out.items()))
