"""BrowseComp-Plus end to end: its corpus format, tools, judge template,
run files, evaluation_summary.json, detailed_judge_results.csv, evidence
recall against qrels and [docid] citations.

The real corpus (100k pages) and its decrypted queries are not bundled: a
corpus in its JSONL format is made from the bundled 2Wiki pages (numeric
docids), the queries from the demo tasks, the qrels from their evidence.
Policy and judge are a real local HTTP server; the eval is the binary's own
code path (`evaluation.job.run_config` on the `browsecomp_plus` config
variant).
"""

import asyncio
import csv
import importlib.util
import json
import pathlib
import re

import pytest

from search_agent.agent import trajectory
from search_agent.corpus import twowiki
from search_agent.corpus.sources import CorpusSpec
from search_agent.evaluation import browsecomp_plus
from search_agent.evaluation import browsecomp_plus_tools as bcp_tools
from search_agent.evaluation import job
from search_agent.evaluation import results
from search_agent.search import trec
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index
from tpu_configs import eval as eval_config

_spec = importlib.util.spec_from_file_location(
    'openai_server',
    pathlib.Path(__file__).parents[1] / 'llm' / 'openai_server.py',
)
openai_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openai_server)

# The run-file schema of texttron/BrowseComp-Plus (evaluate_run.py reads
# query_id, status, retrieved_docids, tool_call_counts and result[-1]).
RUN_KEYS = {
    'metadata', 'query_id', 'tool_call_counts', 'status', 'retrieved_docids',
    'result',
}  # fmt: skip
ITEM_KEYS = {'type', 'tool_name', 'arguments', 'output'}


@pytest.fixture(scope='module')
def bcp(tmp_path_factory, repo_root):
  """A BrowseComp-Plus-format corpus, index, queries and qrels."""
  root = tmp_path_factory.mktemp('bcp')
  docs = twowiki.read_2wiki(twowiki.BUNDLED_2WIKI)[:500]
  docid = {d.title: str(10_000 + i) for i, d in enumerate(docs)}
  with (root / 'corpus.jsonl').open('w') as f:
    for d in docs:
      row = {'docid': docid[d.title], 'text': d.text, 'url': d.url}
      f.write(json.dumps(row) + '\n')
  spec = CorpusSpec(
      kind='browsecomp_plus', path=str(root / 'corpus.jsonl'),
      derive_links=False,
  )  # fmt: skip
  build_tantivy_index(spec, root / 'index')
  tasks = [
      json.loads(l)
      for l in (repo_root / 'eval/data/2wiki_demo_tasks.jsonl').open()
  ]
  qrels = {}
  with (root / 'queries.jsonl').open('w') as f:
    for i, t in enumerate(tasks):
      qid = str(700 + i)
      f.write(json.dumps({'query_id': qid, 'query': t['question'],
                          'answer': t['answer']}) + '\n')  # fmt: skip
      qrels[qid] = {docid[e]: 1 for e in t['evidence']}
  trec.write_qrels(root / 'qrels.txt', qrels)
  return {'root': root, 'docid': docid, 'qrels': qrels}


def test_the_tools_answer_in_the_benchmarks_format(bcp):
  engine = tantivy_engine(bcp['root'] / 'index')
  try:
    box = bcp_tools.BrowseCompPlusToolbox(
        engine, k=5, snippet_max_tokens=8, truncate=bcp_tools.word_truncate
    )
    assert [s['function']['name'] for s in box.schemas()] == [
        'search', 'get_document',
    ]  # fmt: skip
    assert 'top-5 hits with docid, score, and snippet' in (
        box.schemas()[0]['function']['description']
    )
    call = trajectory.ToolCall(
        name='search', arguments={'query': 'Teutberga queen king'}
    )
    res = asyncio.run(box.execute(call))
    rows = json.loads(res.text)
    assert len(rows) == 5 and set(rows[0]) == {'docid', 'score', 'snippet'}
    assert rows[0]['docid'] == bcp['docid']['Teutberga']
    assert len(rows[0]['snippet'].split()) == 8  # the first 8 words
    assert res.data['docids'] == [r['docid'] for r in rows]
    got = asyncio.run(box.execute(trajectory.ToolCall(
        name='get_document', arguments={'docid': rows[0]['docid']})))  # fmt: skip
    body = json.loads(got.text)
    assert body['docid'] == rows[0]['docid'] and 'Lothair II' in body['text']
    none = asyncio.run(box.execute(trajectory.ToolCall(
        name='get_document', arguments={'docid': '999999'})))  # fmt: skip
    assert none.text == 'null' and none.error is None
    bad = asyncio.run(box.execute(trajectory.ToolCall(
        name='search', arguments={'q': 'x'})))  # fmt: skip
    assert bad.error == "search takes one argument 'query' (a string)"
  finally:
    engine.close()


def _serve(body):
  """Policy: search, then answer citing the first hit; judge: the
  BrowseComp-Plus verdict format (yes for Lothair II)."""
  first = body['messages'][0]['content']
  if first.startswith('Judge whether'):
    assert '[correct_answer]: Repeat the [correct_answer] given above.' in first
    ok = '[correct_answer]: Lothair II' in first
    return 200, openai_server.reply(
        'extracted_final_answer: Lothair II\n\nreasoning: ...\n\n'
        f'correct: {"yes" if ok else "no"}\n\nconfidence: 80%'
    )
  tool_turns = [m for m in body['messages'] if m['role'] == 'tool']
  if not tool_turns:
    call = {'name': 'search', 'arguments': {'query': 'Teutberga queen'}}
    return 200, openai_server.reply(
        f'<tool_call>{json.dumps(call)}</tool_call>'
    )
  hits = json.loads(tool_turns[-1]['content'])
  return 200, openai_server.reply(
      f'Explanation: Teutberga married Lothair II [{hits[0]["docid"]}].\n'
      'Confidence: 80%\n<answer>Lothair II</answer>',
      reasoning='The first hit is her page.',
  )


def test_end_to_end(bcp, tmp_path, repo_root):
  server = openai_server.ScriptedServer(_serve)
  c = eval_config.get_config('browsecomp_plus')
  root = bcp['root']
  c.dataset.update(path=str(root / 'queries.jsonl'),
                   qrels_path=str(root / 'qrels.txt'))  # fmt: skip
  c.search.index_dir = str(root / 'index')
  c.agent.update(max_steps=4, context_limit=32_768, max_output_tokens=1_024)
  c.agent.min_output_tokens = 256
  for role in ('policy', 'judge'):
    c[role].kind = 'openai'
    c[role].openai.update(base_url=server.base_url, model=f'{role}-m',
                          backoff_s=0.01)  # fmt: skip
  with server.running():
    report = job.run_config(c, str(tmp_path))
  s = report['summary']
  assert s['pass_at_1_strict'] == 0.25 and s['questions'] == 4
  # Its judge sampling: temperature 0.7, top-p 0.8, top-k 20, no thinking.
  judged = [r for r in server.requests if r['model'] == 'judge-m']
  assert len(judged) == 4
  assert (judged[0]['temperature'], judged[0]['top_p']) == (0.7, 0.8)
  assert judged[0]['top_k'] == 20
  assert judged[0]['chat_template_kwargs'] == {'enable_thinking': False}
  judge = report['manifest']['judge']
  assert judge['template'] == 'browsecomp_plus_grader.txt'
  assert judge['benchmark_grader'].startswith('texttron/BrowseComp-Plus')
  assert report['manifest']['tools']['names'] == ['search', 'get_document']
  # Evidence recall: every query's first evidence page was in the hits of
  # "Teutberga queen" only for the two Teutberga questions.
  recs = {r['task_id']: r for r in results.read_records(
      tmp_path / results.RESULTS).values()}  # fmt: skip
  teut = bcp['docid']['Teutberga']
  r1 = recs['browsecomp-plus-700']
  assert teut in r1['retrieved_doc_ids'] and r1['evidence_recall'] == 1.0
  assert r1['cited_doc_ids'] == [teut]
  assert (r1['citation_precision'], r1['citation_recall']) == (1.0, 1.0)
  # Structured doc ids in the trajectory, per call.
  [traj] = [t for t in trajectory.iter_jsonl(tmp_path / results.TRAJECTORIES)
            if t.task_id == 'browsecomp-plus-700']  # fmt: skip
  assert traj.meta['doc_ids'][0]['tool'] == 'search'
  assert traj.meta['doc_ids'][0]['doc_ids'][0] == teut
  # Run files in the benchmark's format.
  run = json.loads((tmp_path / 'runs' / 'run_700.json').read_text())
  assert set(run) == RUN_KEYS and run['query_id'] == '700'
  assert run['metadata']['model'] == 'policy-m'
  assert run['metadata']['max_tokens'] == 1_024
  assert run['status'] == 'completed'
  assert run['tool_call_counts'] == {'search': 1}
  assert teut in run['retrieved_docids']
  assert all(set(i) == ITEM_KEYS for i in run['result'])
  assert [i['type'] for i in run['result']] == [
      'tool_call', 'reasoning', 'output_text',
  ]  # fmt: skip
  assert json.loads(run['result'][0]['arguments']) == {
      'query': 'Teutberga queen'
  }
  assert '<answer>Lothair II</answer>' in run['result'][-1]['output']
  summary = json.loads((tmp_path / browsecomp_plus.SUMMARY).read_text())
  assert list(summary) == [
      'LLM', 'Accuracy (%)', 'Recall (%)', 'avg_tool_stats',
      'Calibration Error (%)', 'Retriever', 'Link', 'Evaluation Date',
      'per_query_metrics',
  ]  # fmt: skip
  assert summary['LLM'] == 'policy-m' and summary['Accuracy (%)'] == 25.0
  assert summary['avg_tool_stats'] == {'search': 1.0}
  assert summary['Calibration Error (%)'] == 0.0  # < 100 answers, as theirs
  recall = [q['recall'] for q in summary['per_query_metrics']]
  assert summary['Recall (%)'] == round(sum(recall) / 4, 2)
  with (tmp_path / browsecomp_plus.DETAILS).open() as f:
    rows = list(csv.DictReader(f))
  assert tuple(rows[0]) == browsecomp_plus.CSV_FIELDS and len(rows) == 4
  by_q = {r['query_id']: r for r in rows}
  assert by_q['700']['judge_correct'] == 'True'
  assert by_q['700']['predicted_answer'] == 'Lothair II'
  assert by_q['700']['num_citations'] == '1'
  assert re.fullmatch(r'.*/runs/run_700\.json', by_q['700']['json_path'])


def test_bundled_qrels_read_as_evidence(shared_data):
  qrels = trec.read_qrels(
      shared_data / 'benchmarks' / 'browsecomp-plus-qrel_evidence.txt'
  )
  assert len(qrels) == 830
  assert set(qrels['769']) >= {'18639', '41759', '46697'}
