r"""Retrieval fidelity: evidence recall@k of the fused search, TREC run export,
and fusion tuning.

  python -m index.calibrate --config=tpu_configs/search/calibrate.py:tiny \
      --workdir=/tmp/cal
  python -m index.calibrate --config=tpu_configs/search/calibrate.py \
      --config.mode=tune --config.tune.tasks=DIR/tasks.train.jsonl,... \
      --workdir=/tmp/tune

Scores the engine of a serve config against TREC topics and qrels, or, when
none are given, against known-item or linked-pair topics made from the
corpus (search_agent/search/calibration.py says how). Writes to the workdir:
topics.tsv and qrels.txt (when made), run.trec (top `run_depth` per topic)
and recall.json (macro and micro evidence recall@k, trec.py's formulas).

`mode=tune` (search_agent/search/tuning.py) splits the topics (task
evidence pages when `tune.tasks` names task files, else as above) into
train/dev/test, tunes RRF k, the view weights and per-view depth (and, with
--config.backend=lucene, BM25 k1/b per view over `tune.grid.bm25_*`, kept
only when dev gains), and writes the chosen values to fusion.json (load them
with --config.engine.fusion_file=; a file with BM25 serves only on lucene)
and tune.json: recall@10, all-gold@10 and recall@100 before and after on dev
and test.

`mode=live` (search_agent/search/live.py) reads a log of live search results
and writes live_recall.json (local top-k evidence recall against the live
targets) and, with a judge LLM, judge.jsonl and live_report.json (blind
position-swapped snippet preference with a Wilson interval).
"""

import asyncio
import dataclasses
import json
import pathlib
import random

from absl import app
from absl import flags
from ml_collections import config_flags

from search_agent.corpus.sources import CorpusSpec
from search_agent.corpus.sources import read_corpus
from search_agent.llm import registry
from search_agent.search import calibration
from search_agent.search import live
from search_agent.search import service
from search_agent.search import trec
from search_agent.search import tuning
from search_agent.search.backend import BackendError
from search_agent.search.engine import SearchEngine
from search_agent.search.lucene_backend import DEFAULT_BM25
from search_agent.search.lucene_backend import LuceneBackend
from search_agent.search.parser import QueryError

_CONFIG = config_flags.DEFINE_config_file(
    'config', None, 'Calibrate config (tpu_configs/search/calibrate.py).',
    lock_config=True,
)  # fmt: skip
_WORKDIR = flags.DEFINE_string('workdir', None, 'Outputs (and a tiny index).')
flags.mark_flags_as_required(['config', 'workdir'])


def _topics_and_qrels(c, workdir: pathlib.Path):
  if c.topics or c.qrels:
    return trec.read_topics(c.topics), trec.read_qrels(c.qrels)
  docs = list(read_corpus(CorpusSpec(**c.corpus))[0])
  if c.generated == 'known_item':
    topics, qrels = calibration.make_known_item_topics(
        docs,
        c.num_topics,
        seed=c.seed,
        min_words=c.min_query_words,
        max_words=c.max_query_words,
    )
  elif c.generated == 'linked_pair':
    topics, qrels = calibration.make_linked_pair_topics(
        docs, c.num_topics, seed=c.seed, words_each=c.pair_words_each
    )
  else:
    raise ValueError(
        f"generated must be 'known_item' or 'linked_pair': {c.generated!r}"
    )
  trec.write_topics(workdir / 'topics.tsv', topics)
  trec.write_qrels(workdir / 'qrels.txt', qrels)
  return topics, qrels


def _lucene_backend(c, workdir: pathlib.Path, bm25) -> LuceneBackend:
  index_dir = c.index_dir or workdir / 'index'
  return LuceneBackend(index_dir, threads=c.backend_threads, bm25=bm25)


def _lucene_view_search(c, workdir: pathlib.Path, engine, topics, depth):
  """`(view, (k1, b)) -> {qid: doc_ids}`: one view of every topic searched
  to `depth` on the Lucene index with that view's BM25 changed."""
  parsed = {}
  for qid, text in topics.items():
    try:
      parsed[qid] = engine.parse(text)
    except QueryError:
      pass

  def search(view, kb):
    backend = _lucene_backend(c, workdir, {**DEFAULT_BM25, view: kb})
    try:
      lists = {q: backend.rank_view(p, view, depth) for q, p in parsed.items()}
    finally:
      backend.close()
    return {q: lists.get(q, []) for q in topics}

  return search


def _tune(c, workdir: pathlib.Path, engine) -> None:
  t = c.tune
  if t.tasks:
    docs = list(read_corpus(CorpusSpec(**c.corpus))[0])
    topics, qrels, groups = calibration.topics_from_tasks(
        t.tasks.split(','), docs
    )
  else:
    topics, qrels = _topics_and_qrels(c, workdir)
    groups = {q: q for q in topics}
  topics = {
      q: v
      for q, v in topics.items()
      if q in qrels and len(qrels[q]) >= t.min_gold
  }
  if t.max_topics:
    topics = dict(sorted(topics.items())[: t.max_topics])
  splits = {'train': [], 'dev': [], 'test': []}
  for qid in sorted(topics):
    splits[tuning.split_of(groups[qid], t.fractions, t.split_seed)].append(qid)
  before = tuning.Fusion.of(engine.config)
  grid = {
      'rrf_k': t.grid.rrf_k,
      'weights': {v: t.grid[v] for v in ('doc', 'passage', 'title')},
      'depth_factor': t.grid.depth_factor,
  }
  depth = max(engine.config.min_depth, max(t.grid.depth_factor) * c.k)
  cache = tuning.view_cache(engine, topics, depth)
  chosen, rows = tuning.tune(
      cache, qrels, splits['train'], splits['dev'], before, grid, k=c.k,
      min_depth=engine.config.min_depth, rounds=t.rounds,
      finalists=t.finalists,
  )  # fmt: skip
  report = {'splits': {s: len(q) for s, q in splits.items()}}
  backends = {'before': engine.backend, 'after': engine.backend}
  if c.backend == 'lucene' and t.grid.bm25_k1 and t.grid.bm25_b:
    bm25, bm25_rows = tuning.tune_bm25(
        _lucene_view_search(c, workdir, engine, topics, depth), cache, qrels,
        splits['train'], splits['dev'], chosen,
        {'k1': t.grid.bm25_k1, 'b': t.grid.bm25_b}, k=c.k,
        min_depth=engine.config.min_depth, rounds=t.rounds,
    )  # fmt: skip
    report['bm25'] = {'chosen': bm25, 'rows': bm25_rows}
    if bm25 != {v: list(DEFAULT_BM25[v]) for v in bm25}:
      chosen = dataclasses.replace(chosen, bm25=bm25)
      backends['after'] = _lucene_backend(c, workdir, bm25)
  else:
    report['bm25'] = tuning.BM25_NOTE
  for name, f in (('before', before), ('after', chosen)):
    eng = SearchEngine(  # the same backend, another fusion
        backends[name], tuning.with_fusion(engine.config, f), engine.guard,
        analyzer=engine.analyzer, idf=engine.idf,
    )  # fmt: skip
    report[name] = {
        'fusion': dataclasses.asdict(f),
        **{s: tuning.evaluate(eng, topics, qrels, splits[s], (c.k, 100))
           for s in ('dev', 'test')},
    }  # fmt: skip
  if backends['after'] is not engine.backend:
    backends['after'].close()
  key = f'recall@{c.k}'
  report['test_improved'] = report['after']['test'][key] > (
      report['before']['test'][key]
  )
  report['finalists'] = rows
  out = pathlib.Path(t.fusion_file or workdir / 'fusion.json')
  chosen.write(out)
  (workdir / 'tune.json').write_text(json.dumps(report, indent=1) + '\n')
  for s in ('dev', 'test'):
    b, a = report['before'][s], report['after'][s]
    print(
        f'{s} ({b["topics"]} topics): recall@{c.k} {b[key]:.4f} ->'
        f' {a[key]:.4f}, all-gold@{c.k} {b[f"all_gold@{c.k}"]:.4f} ->'
        f' {a[f"all_gold@{c.k}"]:.4f}, recall@100 {b["recall@100"]:.4f} ->'
        f' {a["recall@100"]:.4f}'
    )
  print(f'chosen {dataclasses.asdict(chosen)} -> {out}')


def _recall(c, workdir: pathlib.Path, engine) -> None:
  topics, qrels = _topics_and_qrels(c, workdir)
  run, rejected = calibration.run_topics(
      engine, topics, c.run_depth, c.batch_size
  )
  trec.write_run(workdir / 'run.trec', run, tag=c.run_tag)
  report = dataclasses.asdict(trec.evidence_recall(qrels, run, c.k))
  del report['per_query']
  report['topics'] = c.topics or c.generated
  report['rejected_queries'] = rejected
  report['qrels_without_topic'] = sorted(set(qrels) - set(topics))
  (workdir / 'recall.json').write_text(json.dumps(report, indent=2) + '\n')
  print(
      f'evidence recall@{c.k}: macro {report["macro"]:.4f}, micro'
      f' {report["micro"]:.4f} ({report["num_found"]}/'
      f'{report["num_targets"]} targets, {report["num_queries"]} queries,'
      f' {len(rejected)} rejected)'
  )


def _live(c, workdir: pathlib.Path, engine) -> None:
  lc = c.live
  if not lc.log:
    raise ValueError('mode=live needs --config.live.log=LOG.jsonl')
  log = live.read_log(lc.log)
  urls = None
  if lc.corpus_urls:
    docs = read_corpus(CorpusSpec(**c.corpus))[0]
    urls = {live.normalize_url(d.url) for d in docs}
  report, pairs, rows = live.compare(engine, log, c.k, corpus_urls=urls)
  (workdir / 'live_recall.json').write_text(
      json.dumps({**report, 'per_query': rows}, indent=1) + '\n'
  )
  print(
      f'live evidence recall@{c.k}: macro {report["macro"]:.4f}, micro'
      f' {report["micro"]:.4f} ({report["found"]}/{report["targets"]}'
      f' targets, {report["queries"]} queries); {len(pairs)} matched pairs'
  )
  if not lc.judge.kind:
    return
  random.Random(lc.pair_seed).shuffle(pairs)
  pairs = pairs[: lc.max_pairs]
  llm = registry.build(registry.from_dict(lc.judge.to_dict()))
  judge = live.SnippetJudge(llm, concurrency=lc.concurrency)
  verdicts = asyncio.run(judge.judge_all(pairs))
  with open(workdir / 'judge.jsonl', 'w', encoding='utf-8') as f:
    for p, v in zip(pairs, verdicts):
      f.write(json.dumps({**dataclasses.asdict(p), **v}) + '\n')
  pref = live.preference(verdicts)
  summary = {
      'recall': report, 'judge': pref, 'judge_llm': llm.name,
      'prompt_sha256': judge.prompt.sha256,
  }  # fmt: skip
  (workdir / 'live_report.json').write_text(json.dumps(summary, indent=1))
  lo, hi = pref['interval_95']
  print(
      f'local snippet preference {pref["local_preference"]} (95% {lo}-{hi})'
      f' over {pref["pairs"]} pairs: {pref["local"]} local, {pref["live"]}'
      f' live, {pref["tie"]} ties'
  )


_MODES = {'recall': _recall, 'tune': _tune, 'live': _live}


def main(argv):
  del argv
  c, workdir = _CONFIG.value, pathlib.Path(_WORKDIR.value)
  if c.mode not in _MODES:
    raise ValueError(f'mode must be one of {sorted(_MODES)}, got {c.mode!r}')
  workdir.mkdir(parents=True, exist_ok=True)
  try:
    engine = service.open_engine(c, workdir)
  except BackendError as e:  # a fresh workdir: say which index and how
    raise SystemExit(
        f'index.calibrate: {e}; to build it: python -m index.build'
        f' --config=tpu_configs/search/build.py --workdir={workdir} (or pass'
        ' --config.build_if_missing=True, or --config.index_dir=IDX)'
    ) from e
  try:
    _MODES[c.mode](c, workdir, engine)
  finally:
    engine.close()


if __name__ == '__main__':
  app.run(main)
