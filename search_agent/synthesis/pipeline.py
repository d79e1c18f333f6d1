"""The synthesis run: corpus → claims → anchor/evidence graphs → loop → tasks.

`prepare` is deterministic and cheap (recomputed on resume); `run_loop`
processes evidence graphs in chunks, journalling each finished graph;
`write_outputs` rebuilds tasks.{train,rl,heldout,heldout_phrasings}.jsonl,
decisions.jsonl,
funnel.{json,md,png} and manifest.json from the journal.
"""

import asyncio
import dataclasses
import json
import pathlib
import shutil
import time
from typing import Any, Callable

import tqdm

from search_agent.agent.task import Claim
from search_agent.corpus import sources
from search_agent.corpus.record import Document
from search_agent.search.tantivy_build import build_tantivy_index
from search_agent.synthesis import entities
from search_agent.synthesis import evidence_paths as paths_lib
from search_agent.synthesis import funnel as funnel_lib
from search_agent.synthesis import graph as graph_lib
from search_agent.synthesis import journal as journal_lib
from search_agent.synthesis import patterns
from search_agent.synthesis import split as split_lib
from search_agent.synthesis import tasks as tasks_lib
from search_agent.synthesis.loop import SynthesisLoop
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Proposal


@dataclasses.dataclass(frozen=True, kw_only=True)
class Prepared:
  """Everything the loop needs, derived deterministically from the corpus."""

  docs: dict[str, Document]
  types: dict[str, str]
  claims: dict[str, list[PageClaim]]
  graphs: list[EvidenceGraph]
  anchors: dict[str, str]  # evidence graph id → anchor graph id
  counts: dict[str, Any]


def ensure_index(
    spec: sources.CorpusSpec, workdir: pathlib.Path
) -> pathlib.Path:
  """DIR/index, built there (via a temp dir, renamed) when absent."""
  index = workdir / 'index'
  if (index / 'manifest.json').exists():
    return index
  tmp = workdir / 'index.building'
  if tmp.exists():
    shutil.rmtree(tmp)
  build_tantivy_index(spec, tmp)
  tmp.rename(index)
  return index


ClaimFn = Callable[
    [list[Document], dict[tuple, str]], dict[str, list[PageClaim]]
]


def prepare(
    spec: sources.CorpusSpec,
    anchor: graph_lib.AnchorConfig,
    max_hops: int,
    max_graphs: int,
    extract: ClaimFn | None = None,
) -> Prepared:
  """Reads the corpus, samples anchor graphs, extracts claims, finds paths.

  The pattern extractor (default) reads every page (the controller's
  uniqueness check needs all claims); an LLM extractor reads only the
  anchor graphs' pages, and its free-form relations may all be hops.
  """
  docs_list, links_note = sources.read_corpus(spec)
  docs_list = list(docs_list)
  docs = {d.doc_id: d for d in docs_list}
  types = {d.doc_id: entities.entity_type(d) for d in docs_list}
  link_graph = graph_lib.LinkGraph(docs_list)
  anchors, anchor_counts = graph_lib.anchor_graphs(
      link_graph, types, anchor, entities.TYPES
  )
  titles = entities.title_index(docs_list)
  if extract is None:
    claims = patterns.extract_all(docs_list, titles)
    hop_relations = paths_lib.schema.ENTITY_RELATIONS
  else:
    nodes = dict.fromkeys(n for a in anchors for n in a.nodes)
    claims = extract([docs[n] for n in nodes], titles)
    hop_relations = None
  graphs, graph_counts = paths_lib.evidence_graphs(
      anchors, claims, max_hops, hop_relations=hop_relations
  )
  if max_graphs:
    graphs = graphs[:max_graphs]
  type_counts: dict[str, int] = {}
  for t in types.values():
    type_counts[t] = type_counts.get(t, 0) + 1
  counts = {
      'links': links_note,
      'entity_types': dict(sorted(type_counts.items())),
      'anchor_graphs': anchor_counts,
      'evidence_graphs': dict(graph_counts, used=len(graphs)),
      'claims_by_relation': paths_lib.relation_counts(
          c for cs in claims.values() for c in cs
      ),
  }
  return Prepared(
      docs=docs,
      types=types,
      claims=claims,
      graphs=graphs,
      anchors={g.id: g.anchor for g in graphs},
      counts=counts,
  )


def run_loop(
    loop: SynthesisLoop,
    graphs: list[EvidenceGraph],
    journal: journal_lib.Journal,
    chunk_size: int,
    progress: bool = True,
) -> int:
  """Runs the loop over graphs not yet journalled; returns graphs run."""
  todo = [g for g in graphs if not journal.done(g.id)]
  bar = tqdm.tqdm(
      total=len(graphs), initial=len(graphs) - len(todo), disable=not progress,
      desc='evidence graphs', unit='graph',
  )  # fmt: skip
  for i in range(0, len(todo), chunk_size):
    chunk = todo[i : i + chunk_size]
    for record in asyncio.run(loop.run_chunk(chunk)):
      journal.append(record)
    bar.update(len(chunk))
  bar.close()
  return len(todo)


def collect_tasks(
    prep: Prepared, journal: journal_lib.Journal, decision: str = 'accepted'
):
  """Tasks of proposals with `decision`, in graph order; dedup count."""
  out = []
  for g in prep.graphs:
    rec = journal.records.get(g.id)
    if rec is None:
      continue
    for e in rec['decisions']:
      if e['decision'] != decision:
        continue
      p = Proposal.from_json(e['proposal'])
      required = e.get('required_claims')
      out.append(
          tasks_lib.task_from_proposal(
              p,
              prep.docs,
              anchor=prep.anchors[g.id],
              entry=e,
              required=None if required is None else _claims(required),
          )
      )
  return tasks_lib.dedupe(out)


def _claims(items):
  return tuple(Claim(**c) for c in items)


def _hops(tasks) -> dict[str, int]:
  out: dict[str, int] = {}
  for t in tasks:
    k = str(t.meta['hops'])
    out[k] = out.get(k, 0) + 1
  return dict(sorted(out.items()))


def write_outputs(
    workdir: pathlib.Path,
    prep: Prepared,
    journal: journal_lib.Journal,
    heldout_fraction: float,
    rl_fraction: float,
    seed: int,
    manifest: dict[str, Any],
    extras: dict[str, Any] | None = None,
    heldout_phrasings: frozenset[str] = frozenset(),
) -> dict[str, Any]:
  """Writes every output file from the journal; returns the report.

  `extras` (e.g. the LLM roles' counters under 'roles' and the role check
  under 'role_check') are added to funnel.json as they are. The held-out
  tasks asked again in the `heldout_phrasings` (phrasing ids no task may
  be generated in) go to tasks.heldout_phrasings.jsonl.

  Raises:
    split.PhrasingLeakError: A task is asked in a held-out phrasing (a
      journal written with other held-out phrasings).
  """
  tasks, duplicates = collect_tasks(prep, journal)
  split_lib.check_no_heldout_phrasing(tasks, heldout_phrasings)
  train, rl, held = split_lib.split_three(
      tasks, heldout_fraction, rl_fraction, seed
  )
  phrased = split_lib.asked_in_heldout_phrasings(held, heldout_phrasings)
  for name, rows in (
      ('train', train),
      ('rl', rl),
      ('heldout', held),
      ('heldout_phrasings', phrased),
  ):
    journal_lib.write_jsonl_atomic(
        workdir / f'tasks.{name}.jsonl',
        [dict(t.to_json(), meta=dict(t.meta, split=name)) for t in rows],
    )
  hard, _ = collect_tasks(prep, journal, 'hard_candidate')
  journal_lib.write_jsonl_atomic(
      workdir / 'tasks.hard_candidates.jsonl', [t.to_json() for t in hard]
  )
  records = [journal.records[g.id] for g in prep.graphs if journal.done(g.id)]
  journal_lib.write_jsonl_atomic(
      workdir / 'decisions.jsonl',
      [
          dict(graph=r['graph'], **{k: e[k] for k in ('decision', 'reason')},
               proposal=e['proposal']['id'],
               question=e['proposal']['question'],
               hops=len(e['proposal']['path']['claims']))  # fmt: skip
          for r in records
          for e in r['decisions']
      ],
  )
  report = {
      'funnel': funnel_lib.funnel(records),
      'anchor_graphs': prep.counts['anchor_graphs'],
      'evidence_graphs': prep.counts['evidence_graphs'],
      'claims_by_relation': prep.counts['claims_by_relation'],
      'tasks': {
          'accepted_unique': len(tasks),
          'duplicate_questions_dropped': duplicates,
          'train': len(train),
          'rl': len(rl),
          'heldout': len(held),
          'heldout_phrasings': len(phrased),
          'heldout_phrasing_ids': sorted(heldout_phrasings),
          'hard_candidates': len(hard),
          'hops_train': _hops(train),
          'hops_rl': _hops(rl),
          'hops_heldout': _hops(held),
          'hops_heldout_phrasings': _hops(phrased),
          'shared_evidence_pages': len(
              split_lib.shared_pages(train, held)
              | split_lib.shared_pages(train, rl)
              | split_lib.shared_pages(rl, held)
          ),
      },
      **(extras or {}),
  }
  journal_lib.write_atomic(
      workdir / 'funnel.json', json.dumps(report, indent=2)
  )
  journal_lib.write_atomic(workdir / 'funnel.md', funnel_lib.markdown(report))
  funnel_lib.plot(report, str(workdir / 'funnel.png'))
  manifest = dict(manifest, counts=prep.counts, tasks=report['tasks'])
  journal_lib.write_atomic(
      workdir / 'manifest.json', json.dumps(manifest, indent=2)
  )
  return report


def timed(fn, *args, **kwargs):
  start = time.perf_counter()
  out = fn(*args, **kwargs)
  return out, round(time.perf_counter() - start, 2)
