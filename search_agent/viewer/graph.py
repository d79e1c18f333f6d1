"""The evidence graph of a synthesized task, drawn as inline SVG.

As in open-recipe.md's Figure 6: nodes are pages, edges are claims (subject
page -> object page, labelled with the relation); the evidence paths chosen
for the question are red (edges and node borders), other connections gray,
the answer's page filled; on a trajectory's page, the pages its observations
showed are marked 'seen'. Read tolerantly from the task:
  * claims: `task.claims` (+ `meta.graph.edges` [{source, target, relation}]),
  * pages: claim subjects/objects, `task.evidence`, `meta.graph.nodes`,
  * paths: `meta.evidence_paths` / `meta.paths` (lists of pages) or
    `meta.evidence_path` (one list),
  * answer page: `meta.answer_page`, else the page named like the answer.
Layout: columns by hop distance from the answer (the answer rightmost).
"""

import collections
import html
from typing import Any

Json = dict[str, Any]
_W, _ROW, _COL = 180, 56, 280


def _paths(meta: Json) -> list[list[str]]:
  for key in ('evidence_paths', 'paths'):
    p = meta.get(key)
    if isinstance(p, list) and p and all(isinstance(x, list) for x in p):
      return [[str(n) for n in x] for x in p]
  p = meta.get('evidence_path')
  if isinstance(p, list) and p:
    if all(isinstance(x, list) for x in p):
      return [[str(n) for n in x] for x in p]
    return [[str(n) for n in p]]
  return []


def edges_and_nodes(task: Json) -> tuple[list[Json], list[str], set, str]:
  """(edges, nodes, highlighted edge keys, answer node) of a task."""
  meta = task.get('meta') or {}
  g = meta.get('graph') if isinstance(meta.get('graph'), dict) else {}
  edges = [
      {
          's': str(c.get('subject', '')),
          't': str(c.get('object', '')),
          'label': str(c.get('relation', '')),
          'source': str(c.get('source', '')),
      }
      for c in task.get('claims') or ()
      if isinstance(c, dict)
  ]
  for e in g.get('edges') or ():
    if isinstance(e, dict):
      edges.append(
          {
              's': str(e.get('source', '')),
              't': str(e.get('target', '')),
              'label': str(e.get('relation', e.get('label', ''))),
              'source': '',
          }
      )
  nodes = list(
      dict.fromkeys(
          [n for e in edges for n in (e['s'], e['t'])]
          + [str(x) for x in task.get('evidence') or ()]
          + [
              str(n.get('title', n.get('id', '')) if isinstance(n, dict) else n)
              for n in g.get('nodes') or ()
          ]
      )
  )
  answer = str(meta.get('answer_page') or '')
  if not answer:
    ans = str(task.get('answer', '')).lower()
    answer = next((n for n in nodes if n.lower() == ans), '')
  # A path ends at the answer (a page, or the value its last claim reads).
  paths = [
      p + [answer] if answer and p[-1] != answer else p for p in _paths(meta)
  ]
  for p in paths:
    nodes += [n for n in p if n not in nodes]
  hot = {(a, b) for p in paths for a, b in zip(p, p[1:])}
  hot |= {(b, a) for a, b in hot}
  return edges, [n for n in nodes if n], hot, answer


def _layout(
    nodes: list[str], edges: list[Json], answer: str
) -> dict[str, tuple[float, float]]:
  adj = collections.defaultdict(set)
  for e in edges:
    adj[e['s']].add(e['t'])
    adj[e['t']].add(e['s'])
  dist = {answer: 0} if answer else {}
  todo = collections.deque(dist)
  while todo:
    n = todo.popleft()
    for m in adj[n]:
      if m not in dist:
        dist[m] = dist[n] + 1
        todo.append(m)
  far = max(dist.values(), default=0) + 1
  cols = collections.defaultdict(list)
  for n in nodes:
    cols[dist.get(n, far)].append(n)
  depth = max(cols) if cols else 0
  pos = {}
  for d, members in cols.items():
    for k, n in enumerate(members):
      pos[n] = (20 + (depth - d) * _COL, 30 + k * _ROW)
  return pos


def svg(task: Json, seen: frozenset[str] = frozenset()) -> str:
  """The SVG element ('' when the task has no claims, evidence or paths).

  Args:
    task: The task's JSON object.
    seen: Page titles a trajectory's observations showed (class 'seen':
      which evidence pages the agent reached).
  """
  edges, nodes, hot, answer = edges_and_nodes(task)
  if not nodes:
    return ''
  pos = _layout(nodes, edges, answer)
  width = max(x for x, _ in pos.values()) + _W + 40
  height = max(y for _, y in pos.values()) + 60
  on_path = {n for e in hot for n in e}
  out = [
      f'<svg class="evidence-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
      f'viewBox="0 0 {width} {height}" role="img" aria-label="evidence graph">'
  ]
  esc = lambda s: html.escape(s, quote=True)
  for e in edges:
    if e['s'] not in pos or e['t'] not in pos:
      continue
    (x1, y1), (x2, y2) = pos[e['s']], pos[e['t']]
    x1, x2, y1, y2 = x1 + _W / 2, x2 + _W / 2, y1 + 16, y2 + 16
    cls = 'edge hot' if (e['s'], e['t']) in hot else 'edge'
    tip = f'{e["s"]} — {e["label"]} → {e["t"]}' + (
        f' (source: {e["source"]})' if e['source'] else ''
    )
    out.append(
        f'<g class="{cls}"><title>{esc(tip)}</title>'
        f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}"/>'
        f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 4:.0f}">{esc(e["label"][:28])}</text></g>'
    )
  for n, (x, y) in pos.items():
    cls = (
        'node'
        + (' hot' if n in on_path else '')
        + (' answer' if n == answer else '')
        + (' seen' if n in seen else '')
    )
    out.append(
        f'<g class="{cls}"><title>{esc(n)}</title><rect x="{x}" y="{y}" width="{_W}" height="32" rx="6"/>'
        f'<text x="{x + _W / 2}" y="{y + 20}">{esc(n[:26])}</text></g>'
    )
  out.append('</svg>')
  return ''.join(out)
