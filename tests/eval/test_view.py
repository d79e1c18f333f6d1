"""The viewer's data side: sniffing, joins, observations, masks, secrecy.

Real workdirs (eval.run :tiny over the bundled 2Wiki index, filtering.run
:tiny over the bundled WebDancer trajectories); the browser tests are in
test_view_browser.py.
"""

import ast
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from search_agent.evaluation import decryption
from search_agent.viewer import graph
from search_agent.viewer import observations
from search_agent.viewer import page
from search_agent.viewer import run_files
from search_agent.viewer import server
from search_agent.viewer import trajectories
from tests.eval import view_workdirs as wd

_REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def workdirs(tmp_path_factory, tiny_index):
  root = tmp_path_factory.mktemp('view')
  ev = wd.eval_run(root / 'all' / 'eval_cm', tiny_index)
  wd.eval_run(
      root / 'all' / 'eval_no_cm', tiny_index, '--config.context.policy=none'
  )
  wd.filtering_run(root / 'all' / 'filter')
  wd.synthesis_run(root / 'all' / 'synthesis')
  wd.rl_run(root / 'all' / 'rl', ev)
  wd.encrypted_eval_run(root / 'secret' / 'enc', tiny_index)
  wd.eval_run(root / 'reset' / 'run', tiny_index, *_RESETS)
  wd.judged_eval_run(root / 'judged' / 'run', tiny_index)
  wd.eval_run(root / 'mas' / 'run', tiny_index, '--config.mode=mas')
  return root


# A context small enough that discard-all fires after every search.
_RESETS = (
    '--config.agent.context_limit=2400',
    '--config.agent.compress_at=0.5',
)


def test_judge_verdict_and_reason(workdirs):
  d = _runs(workdirs / 'judged')['run'].detail(1)
  g = d['grade']
  assert g['correct'] is True and g['grade_method'] == 'judge'
  assert g['judge_response'] == wd.JUDGE_REPLY
  assert (
      g['judge_reasoning']
      == 'The response names Lothair II, which matches the reference.'
  )


def test_mas_searchers_are_shown(workdirs):
  run = _runs(workdirs / 'mas')['run']
  d = run.detail(0)
  mas = d['mas']
  assert len(mas['searchers']) == 2 and mas['verifier_status'] == 'answered'
  s0 = mas['searchers'][0]
  assert [s['role'] for s in s0['steps']][2:4] == ['assistant', 'tool']
  assert s0['steps'][3]['blocks'][0]['hits'][0]['title'] == 'Teutberga'
  assert run.rows[0]['tools'] == 3  # the system's calls, searchers included


def test_a_real_discard_all_reset(workdirs):
  run = _runs(workdirs / 'reset')['run']
  d = run.detail(0)
  events = d['context_events']
  assert events and events[0]['policy'] == 'discard_all'
  assert events[0]['tokens_after'] < events[0]['tokens_before']
  at = events[0]['at_message']
  assert (
      'dropped by the discard_all reset' in d['steps'][at - 1]['left_context']
  )
  assert (
      'reset'
      in {c['label']: c for c in run.summary['cards']}['context policies'][
          'note'
      ]
  )
  assert {c['label']: c for c in run.summary['cards']}['context resets'][
      'value'
  ] != '0'


def _runs(path, canary=None):
  return {r.id: r for r in page.load_workdir(path, canary)}


def test_the_viewer_runs_without_jax():
  mods = (
      'jax',
      'flax',
      'optax',
      'maxtext',
      'search_agent.model',
      'search_agent.train',
  )
  code = (
      'import sys, eval.view, search_agent.viewer.server; '
      f'bad = sorted(m for m in sys.modules if m.startswith({mods})); '
      'print(bad); sys.exit(1 if bad else 0)'
  )
  out = subprocess.run(
      [sys.executable, '-c', code],
      cwd=_REPO,
      capture_output=True,
      text=True,
      timeout=120,
      check=False,
  )
  assert out.returncode == 0, out.stdout + out.stderr[-2000:]


def test_viewer_modules_import_no_model_or_trainer_code():
  """Direct imports too (the subprocess check above sees transitive ones)."""
  banned = (
      'jax',
      'flax',
      'optax',
      'maxtext',
      'search_agent.model',
      'search_agent.train',
  )
  files = [
      _REPO / 'eval/view.py',
      *sorted((_REPO / 'search_agent/viewer').glob('*.py')),
  ]
  bad = []
  for f in files:
    for node in ast.walk(ast.parse(f.read_text())):
      names = (
          [a.name for a in node.names] if isinstance(node, ast.Import) else []
      )
      if isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module]
      bad += [f'{f.name}: {n}' for n in names if n.startswith(banned)]
  assert len(files) > 8 and not bad, bad


def test_every_kind_of_workdir_is_found_and_joined(workdirs):
  runs = _runs(workdirs / 'all')
  assert sorted(runs) == ['eval_cm', 'eval_no_cm', 'filter', 'rl', 'synthesis']
  ev = runs['eval_cm']
  assert [r['question'] for r in ev.rows] == wd.questions()
  assert sorted(r['verdict'] for r in ev.rows) == [
      'correct',
      'wrong',
      'wrong',
      'wrong',
  ]
  assert (
      ev.rows[0]['reference'] == 'Lothair II'
  )  # from the manifest's task file
  cards = {c['label']: c for c in ev.summary['cards']}
  assert cards['pass@1']['value'] == '25.0% (1/4)'
  assert cards['pass@1']['note'] == '95% wilson interval 4.6% – 69.9%'
  assert cards['context policy']['value'] == 'discard_all'
  assert {b['title']: b['counts'] for b in ev.summary['bars']}[
      'tool calls by tool'
  ] == {'search': 4}
  assert ev.summary['json']['manifest']['tools']['names'] == ['search', 'visit']
  no_cm = {c['label']: c for c in runs['eval_no_cm'].summary['cards']}
  assert no_cm['context policy']['value'] == 'none'


def test_a_trajectory_in_full(workdirs):
  d = _runs(workdirs / 'all')['eval_cm'].detail(0)
  assert (
      d['question'] == wd.questions()[0] and d['final_answer'] == 'Lothair II'
  )
  assert (
      d['grade']['correct'] is True
      and d['grade']['grade_method'] == 'exact_match'
  )
  roles = [s['role'] for s in d['steps']]
  assert roles == ['system', 'user', 'assistant', 'tool', 'assistant']
  call = d['steps'][2]
  assert call['reasoning'] == 'Search first.' and call['tool_calls'][0][
      'arguments'
  ] == {'query': ['Teutberga queen']}
  assert call['trains'] and call['why'].startswith('trains')
  search = d['steps'][3]['blocks'][0]
  assert search['kind'] == 'search' and search['query'] == 'Teutberga queen'
  assert len(search['hits']) == 10 and search['hits'][0]['ref_id'] == 'r1'
  assert search['hits'][0]['title'] == 'Teutberga'
  assert search['hits'][0]['url'] == 'https://en.wikipedia.org/wiki/Teutberga'
  assert 'queen of Lotharingia' in search['hits'][0]['text']
  assert not d['steps'][3]['trains'] and 'observation' in d['steps'][3]['why']
  # The task's evidence page (Teutberga) was among the search hits.
  assert '<g class="node seen"><title>Teutberga</title>' in d['task_graph']


def test_filtering_reasons_and_dropped_trajectories(workdirs):
  run = _runs(workdirs / 'all')['filter']
  report = json.loads((workdirs / 'all/filter/report.json').read_text())
  assert len(run.rows) == report['input']['trajectories']  # removed ones too
  outcomes = [r['outcome'] for r in run.rows]
  assert outcomes.count('kept') == report['output']['trajectories']
  removed = next(r for r in run.rows if r['outcome'] == 'removed')
  assert removed['stage'] == 'correctness' and removed['reason'] == 'incorrect'
  d = run.detail(removed['i'])
  assert d['filter']['detail'].startswith('answer')
  trained = [s for s in d['steps'] if s['role'] == 'assistant']
  assert trained and all(not s['trains'] for s in trained)
  assert any('dropped: removed at correctness' in s['why'] for s in trained)
  assert run.summary['tables'][0]['title'] == 'filter funnel'


def test_synthesis_tasks_and_evidence_graph(workdirs):
  run = _runs(workdirs / 'all')['synthesis']
  assert [(r['id'], r['split'], r['outcome']) for r in run.rows] == [
      ('syn-2', 'heldout', 'rejected'),
      ('syn-1', 'train', 'kept'),
  ]
  d = run.detail(1)
  svg = d['graph_svg']
  assert svg.startswith('<svg') and svg.count('class="node') == 5
  assert svg.count('class="edge hot"') == 3  # the two evidence paths' claims
  assert svg.count('class="node hot answer"') == 1 and '>Lothair II<' in svg
  assert run.summary['json']['funnel']['critic_excellent'] == 1


@pytest.mark.slow
def test_a_real_synthesis_run(tmp_path):
  work = wd.real_synthesis_run(tmp_path / 'syn')
  run = _runs(work)['syn']
  tasks = [r for r in run.rows if r['id'].startswith('syn-')]
  n_tasks = sum(
      len(p.read_text().splitlines()) for p in work.glob('tasks.*.jsonl')
  )
  decisions = [
      json.loads(l) for l in (work / 'decisions.jsonl').read_text().splitlines()
  ]
  # A held-out phrasing re-asks an accepted task: a task row of its own
  # with no decision of its own.
  phrased = work / 'tasks.heldout_phrasings.jsonl'
  n_phrased = len(phrased.read_text().splitlines()) if phrased.exists() else 0
  assert len(tasks) == n_tasks
  assert len(run.rows) == len(decisions) + n_phrased
  assert {r['outcome'] for r in tasks} == {'accepted'}
  returned = [r for r in run.rows if r['outcome'].startswith('returned')]
  assert returned and all(r['reason'] for r in returned)
  assert (
      run.detail(returned[0]['i'])['decision']['reason']
      == returned[0]['reason']
  )
  two = next(r for r in tasks if r['hops'] == 2)
  d = run.detail(two['i'])
  svg = d['graph_svg']
  assert svg.count('class="edge hot"') == 2 and svg.count('answer"') == 1
  assert d['decision']['decision'] == 'accepted'
  table = run.summary['tables'][0]
  assert (
      table['title'] == 'synthesis funnel'
      and table['rows'][0][0] == 'proposals'
  )
  assert run.summary['images']['funnel.png'].startswith(
      'data:image/png;base64,'
  )


def test_rl_rewards_advantages_versions(workdirs):
  run = _runs(workdirs / 'all')['rl']
  assert 'consumed' in run.kinds and 'groups' in run.kinds
  assert [r['correct'] for r in run.rows] == [1.0, 0.0, 0.0, 0.0]
  assert {c['label']: c['value'] for c in run.summary['cards']}[
      'correct'
  ] == '25.0% (1/4)'
  adv = [(r['reward'], r['advantage']) for r in run.rows]
  assert adv == [
      (1.0, pytest.approx(0.4)),
      (0.2, pytest.approx(-0.4)),
      (0.0, 0.0),
      (0.0, 0.0),
  ]
  d = run.detail(0)
  assert d['reward']['advantage_how'].startswith('r - group mean')
  assert (
      d['reward']['versions'] == {'3': 4, '4': 2} and d['reward']['update'] == 1
  )
  assert d['tokens']['trained'] == 6 and d['tokens']['versions'] == {
      '3': 4,
      '4': 2,
  }
  assert d['tokens']['mask_runs'] == [[0, 4], [1, 4], [0, 2], [1, 2]]
  turns = {
      s['i']: s.get('tokens') for s in d['steps'] if s['role'] == 'assistant'
  }
  assert turns[2] == {
      'n': 4,
      'trained': 4,
      'version': '3',
      'mean_logprob': -0.5,
  }
  assert turns[4] == {
      'n': 2,
      'trained': 2,
      'version': '4',
      'mean_logprob': -0.25,
  }
  assert all(s['trains'] for s in d['steps'] if s['role'] == 'assistant')
  dropped = run.detail(2)
  assert dropped['reward']['dropped'] is True
  why = {s['why'] for s in dropped['steps'] if s['role'] == 'assistant'}
  assert why == {
      'eligible, but the trajectory was dropped: its group was dropped by'
      ' dynamic sampling (all advantages zero) at update 1'
  }
  assert [c['title'] for c in run.summary['charts']] == ['reward_mean', 'loss']
  bars = {b['title']: b['counts'] for b in run.summary['bars']}
  assert bars['trained tokens by policy version'] == {'v3': 16, 'v4': 8}
  assert run.summary['json']['parity.json'] == {'max_abs_logprob_gap': 0.0012}
  # Required claims from the manifest's task pool, votes from meta.reward.
  half = run.detail(1)
  assert [c['established'] for c in half['claims']] == [True, False]
  assert (
      half['claims'][0]['relation'] == 'mentions'
      and run.rows[1]['reference'] == 'Lothair II'
  )


def test_loss_reasons():
  assert loss('tool') == (
      False,
      'observation: context only, never carries loss',
  )
  assert loss('assistant', invalid=True)[1].startswith('invalid tool call')
  assert loss('assistant', loss=False)[1].startswith(
      'masked by the turn-level judge'
  )
  assert (
      trajectories.loss_reason(
          {'role': 'assistant'}, removed='removed at dedup: x'
      )[0]
      is False
  )
  assert loss('assistant') == (True, 'trains: model output, loss mask 1')


def loss(role, **kw):
  return trajectories.loss_reason({'role': role, **kw})


def test_context_events_and_sliding_window_marks():
  msgs = [{'role': 'system'}, {'role': 'user'}] + [
      {'role': r} for r in ('assistant', 'tool') * 4
  ]
  base = {
      'messages': msgs,
      'meta': {'context': {'policy': 'sliding_window', 'keep_observations': 2}},
  }
  left = {
      s['i']: s.get('left_context') for s in trajectories.detail(base)['steps']
  }
  assert (
      left[3].startswith('omitted from the context after message 7')
      and left[5]
      and not left[7]
  )
  reset = {
      'messages': msgs,
      'meta': {
          'context': {
              'policy': 'discard_all',
              'events': [
                  {
                      'step': 3,
                      'policy': 'discard_all',
                      'at_message': 6,
                      'tokens_before': 900,
                      'tokens_after': 80,
                      'note': 'n',
                  }
              ],
          }
      },
  }
  d = trajectories.detail(reset)
  assert d['context_events'][0]['tokens_after'] == 80
  assert (
      'dropped by the discard_all reset before step 3'
      in d['steps'][4]['left_context']
  )
  assert 'left_context' not in d['steps'][6]


def test_visit_observation_blocks():
  text = (
      '[r2] Lothair II\nURL: https://en.wikipedia.org/wiki/Lothair_II\nNote: extractive\n'
      'Evidence:\nHe married Teutberga.\n\nHe was king.\n\n[r3] Error: unknown ref_id'
  )
  blocks = observations.parse(text)
  assert (
      blocks[0]['kind'] == 'pages'
      and blocks[0]['hits'][0]['evidence']
      == 'He married Teutberga.\n\nHe was king.'
  )
  assert blocks[0]['hits'][0]['note'] == 'extractive'
  assert observations.parse('[observation omitted: search, 2731 chars]') == [
      {'kind': 'omitted', 'tool': 'search', 'chars': 2731}
  ]


def test_encrypted_runs_stay_encrypted(workdirs, tmp_path):
  enc = workdirs / 'secret'
  before = {p: p.read_bytes() for p in enc.rglob('*') if p.is_file()}
  run = _runs(enc)['enc']
  assert all(
      r['encrypted'] and r['question'] == run_files.ENCRYPTED_QUESTION
      for r in run.rows
  )
  cards = {c['label']: c['value'] for c in run.summary['cards']}
  assert cards['pass@1'] == '25.0% (1/4)'  # numbers are in the clear
  html = page.static_html(enc, list(_runs(enc).values()))
  assert not any(q in html for q in wd.questions())
  # With the canary, the page is built in memory and sealed again.
  page.write_static(enc, tmp_path / 'v.html', wd.CANARY)
  sealed = (tmp_path / 'v.html').read_text()
  answers = [json.loads(l)['answer'] for l in wd.TASKS.read_text().splitlines()]
  assert not any(x in sealed for x in wd.questions() + answers + ['Teutberga'])
  idx = json.loads(sealed.split('id="viewer-index">')[1].split('</script>')[0])
  row = idx['runs'][0]['rows'][0]
  assert row['question'] == page.SEALED and idx['runs'][0]['sealed']
  opened = json.loads(decryption.browsecomp_decrypt(row['sealed'], wd.CANARY))
  assert opened['question'] in wd.questions() and opened['id'] == row['id']
  app = server.ViewerApp(enc, wd.CANARY, 0)
  try:
    d = app.runs[0].detail(0)
    assert d['question'] in wd.questions() and d['decrypted']
  finally:
    app.close()
  assert {p: p.read_bytes() for p in enc.rglob('*') if p.is_file()} == before
  wrong = _runs(enc, 'not-the-canary')['enc']
  assert 'does not decrypt' in wrong.rows[0]['question']


def test_torn_and_odd_lines_are_listed_not_fatal(workdirs, tmp_path):
  work = tmp_path / 'run'
  shutil.copytree(workdirs / 'all' / 'eval_cm', work)
  odd = {'id': 'odd', 'task_id': 'x', 'question': 'q?', 'messages': [
      {'role': 'assistant', 'content': None}, 'not a message',
      {'role': 'tool', 'content': '[r1] T\nURL: u\ns'}]}  # fmt: skip
  with open(work / 'trajectories.jsonl', 'a') as f:
    f.write(json.dumps(odd) + '\n{"id": "torn", "task_')
  run = _runs(tmp_path)['run']
  assert len(run.rows) == 5 and run.rows[-1]['id'] == 'odd'
  assert any('trajectories.jsonl:6' in e for e in run.errors)
  steps = run.detail(4)['steps']
  assert [s['role'] for s in steps] == ['assistant', 'unknown', 'tool']
  assert steps[0]['content'] == ''
  assert steps[2]['blocks'][0]['hits'][0]['url'] == 'u'
  assert page.static_html(tmp_path, [run])


def test_no_run_is_a_clear_error(tmp_path):
  with pytest.raises(run_files.ViewerError, match='no run found'):
    page.load_workdir(tmp_path)


def test_graph_of_a_task_without_claims_is_empty():
  assert graph.svg({'id': 'x', 'question': 'q', 'answer': 'a'}) == ''
