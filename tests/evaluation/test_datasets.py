"""Readers for the published formats (BrowseComp, BrowseComp-Plus, tasks)."""

import csv
import json

import pytest

from search_agent.evaluation import datasets
from search_agent.evaluation import decryption

CANARY = 'BENCHMARK DATA SHOULD NEVER APPEAR AS PLAIN TEXT ONLINE. test'


def _browsecomp_csv(path, rows):
  with open(path, 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f)
    w.writerow(['problem', 'answer', 'problem_topic', 'canary'])
    for q, a, topic in rows:
      enc = lambda s: decryption.browsecomp_encrypt(s, CANARY)
      w.writerow([enc(q), enc(a), topic, CANARY])


def test_browsecomp_csv(tmp_path):
  path = tmp_path / 'bc.csv'
  _browsecomp_csv(path, [('Which city? ' * 5, 'Paris', 'Geography'),
                         ('Who wrote it?', 'Me', 'Art')])  # fmt: skip
  tasks = datasets.load(
      datasets.DatasetConfig(name='bc', format='browsecomp', path=str(path))
  )
  assert [t.id for t in tasks] == ['bc-0', 'bc-1']
  assert tasks[0].question == 'Which city? ' * 5 and tasks[0].answer == 'Paris'
  assert tasks[1].meta == {'topic': 'Art', 'canary': CANARY}
  limited = datasets.load(
      datasets.DatasetConfig(
          name='bc', format='browsecomp', path=str(path), limit=1
      )
  )
  assert len(limited) == 1


def test_browsecomp_csv_missing_column(tmp_path):
  path = tmp_path / 'bad.csv'
  path.write_text('problem,answer\nx,y\n')
  with pytest.raises(datasets.DatasetError, match='missing columns'):
    datasets.load(
        datasets.DatasetConfig(name='b', format='browsecomp', path=str(path))
    )


def test_browsecomp_plus_with_real_qrels(tmp_path, shared_data):
  qrels = shared_data / 'benchmarks' / 'browsecomp-plus-qrel_evidence.txt'
  rows = [
      {
          'query_id': '769',
          'query': decryption.browsecomp_encrypt('q one', CANARY),
          'answer': decryption.browsecomp_encrypt('a one', CANARY),
      },
      {'query_id': 'x1', 'query': 'plain q', 'answer': 'plain a',
       'evidence_docs': [{'docid': '7'}]},
  ]  # fmt: skip
  path = tmp_path / 'bcp.jsonl'
  path.write_text('\n'.join(json.dumps(r) for r in rows))
  tasks = datasets.load(
      datasets.DatasetConfig(
          name='bcp',
          format='browsecomp_plus',
          path=str(path),
          qrels_path=str(qrels),
          canary='',
      )
  )
  # Row 1 has no canary field and none is configured: stays as given.
  assert tasks[0].question == rows[0]['query']
  config = datasets.DatasetConfig(
      name='bcp',
      format='browsecomp_plus',
      path=str(path),
      qrels_path=str(qrels),
      canary=CANARY,
  )
  # With the canary every row must be ciphertext: row 2 is not.
  with pytest.raises(datasets.DatasetError, match=r'bcp.jsonl:2: .*base64'):
    datasets.load(config)
  path.write_text(json.dumps(rows[0]))
  tasks = datasets.load(config)
  assert tasks[0].question == 'q one' and tasks[0].answer == 'a one'
  assert {'18639', '41759', '46697'} <= set(tasks[0].evidence)
  assert tasks[0].meta['query_id'] == '769'


def test_our_task_jsonl(repo_root):
  tasks = datasets.load(
      datasets.DatasetConfig(
          name='demo',
          format='tasks',
          path=str(repo_root / 'eval/data/2wiki_demo_tasks.jsonl'),
      )
  )
  assert [t.answer for t in tasks] == [
      'Lothair II',
      'Lothair I',
      'Hugh of Tours',
      '1950',
  ]


def test_unknown_format_and_missing_file():
  with pytest.raises(datasets.DatasetError, match='not one of'):
    datasets.DatasetConfig(name='x', format='csv', path='x')
  with pytest.raises(datasets.DatasetError, match='no such file'):
    datasets.load(
        datasets.DatasetConfig(name='x', format='tasks', path='/nope')
    )
