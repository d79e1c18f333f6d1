"""The binary: the :tiny contract, and kill (SIGKILL) + resume."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from search_agent.agent.task import iter_tasks
from search_agent.rewards.answer_match import normalize_answer
from search_agent.synthesis import phrasings
from search_agent.synthesis import split

REPO = pathlib.Path(__file__).resolve().parents[2]


def _cmd(workdir, *overrides):
  return [
      sys.executable, '-m', 'search_agent.synthesis.run',
      '--config=tpu_configs/synthesis.py:tiny', f'--workdir={workdir}',
      '--config.progress=False', *overrides,
  ]  # fmt: skip


def _env():
  return dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS='cpu')


def _workdir(tmp_path, bundled_index, name):
  w = tmp_path / name
  shutil.copytree(bundled_index, w / 'index')
  return w


@pytest.fixture(scope='module')
def contract_run(tmp_path_factory, bundled_index):
  """The exact :tiny run (the issue's contract), on the prebuilt index."""
  w = _workdir(tmp_path_factory.mktemp('contract'), bundled_index, 'w')
  start = time.perf_counter()
  subprocess.run(_cmd(w), cwd=REPO, env=_env(), check=True, timeout=300)
  return w, time.perf_counter() - start


@pytest.mark.slow
def test_tiny_contract(contract_run, prepared):
  w, seconds = contract_run
  assert seconds < 300
  titles = {d.title for d in prepared.docs.values()}
  train = list(iter_tasks(w / 'tasks.train.jsonl'))
  held = list(iter_tasks(w / 'tasks.heldout.jsonl'))
  assert len(train) + len(held) >= 500
  for t in train + held:
    assert t.claims and t.evidence
    assert set(t.evidence) <= titles
    assert t.meta['evidence_path'] == list(t.evidence)
    assert len(t.meta['hop_claims']) == t.meta['hops']
    hops = t.meta['hop_claims']
    assert t.answer in hops[-1]['passage']
    for a, b in zip(hops, hops[1:]):
      assert a['object_page'] == b['subject'] and a['object'] in a['passage']
    for form in (t.answer,) + t.aliases:
      assert normalize_answer(form) not in normalize_answer(t.question)
      assert form.lower() not in t.question.lower()
  assert not split.shared_pages(train, held)
  assert (w / 'tasks.rl.jsonl').read_text() == ''  # rl_fraction 0
  held_hops = [t.meta['hops'] for t in held]
  # A mix of hop counts; a 1-hop question that names the page its answer
  # is read from is a shortcut, so most 1-hop proposals go back.
  assert 0 < held_hops.count(1) < len(held)
  assert len({t.id for t in train + held}) == len(train) + len(held)
  report = json.loads((w / 'funnel.json').read_text())
  stages = {s['stage']: s['count'] for s in report['funnel']['stages']}
  assert stages['accepted'] >= 500
  assert stages['proposals'] > stages['controller_pass']
  manifest = json.loads((w / 'manifest.json').read_text())
  assert manifest['roles']['extractor'] == 'programmatic (pattern)'
  assert manifest['roles']['generator'] == 'programmatic (template)'
  assert (w / 'funnel.md').read_text().startswith('# Task synthesis funnel')
  assert (w / 'funnel.png').stat().st_size > 1000
  decisions = [json.loads(l) for l in open(w / 'decisions.jsonl')]
  assert len(decisions) == stages['proposals']
  assert all(d['decision'] and 'reason' in d for d in decisions)
  _check_held_out_phrasings(w, train, held, report['tasks'])


def _check_held_out_phrasings(w, train, held, counts):
  """One phrasing per relation held out; no train or held-out task uses
  one; tasks.heldout_phrasings.jsonl asks the held-out tasks in them."""
  phrased = list(iter_tasks(w / 'tasks.heldout_phrasings.jsonl'))
  held_ids = set(counts['heldout_phrasing_ids'])
  assert len(held_ids) == len(phrasings.FRAMES)
  used = {}
  for t in train + held:
    assert t.meta['phrasing'] and t.meta['phrasing'] not in held_ids
    used.setdefault(t.meta['relations'][-1], set()).add(t.meta['phrasing'])
  assert max(len(v) for v in used.values()) >= 3  # several trained frames
  assert counts['heldout_phrasings'] == len(phrased) == len(held)
  by_id = {t.id: t for t in held}
  for t in phrased:
    base = by_id[t.meta['rephrases']]
    assert t.meta['phrasing'] in held_ids and t.question != base.question
    assert (t.answer, t.evidence) == (base.answer, base.evidence)
    for form in (t.answer,) + t.aliases:
      assert form.lower() not in t.question.lower()


def _journal(path):
  return [json.loads(l) for l in open(path, encoding='utf-8')]


@pytest.mark.slow
def test_sigkill_then_resume_writes_each_graph_once(
    tmp_path, bundled_index, contract_run
):
  w = _workdir(tmp_path, bundled_index, 'killed')
  overrides = ('--config.max_graphs=600', '--config.chunk_size=40')
  proc = subprocess.Popen(_cmd(w, *overrides), cwd=REPO, env=_env())
  journal = w / 'journal.jsonl'
  deadline = time.monotonic() + 240
  while time.monotonic() < deadline and proc.poll() is None:
    if journal.exists() and journal.read_bytes().count(b'\n') >= 80:
      break
    time.sleep(0.02)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait(timeout=60) == -signal.SIGKILL
  before = journal.read_bytes()
  lines_before = before.count(b'\n')
  assert 80 <= lines_before < 600, 'killed mid-run'
  assert not (w / 'tasks.train.jsonl').exists()
  subprocess.run(_cmd(w, *overrides), cwd=REPO, env=_env(), check=True,
                 timeout=300)  # fmt: skip
  after = journal.read_bytes()
  assert after.startswith(before[: before.rfind(b'\n') + 1])
  records = _journal(journal)
  ids = [r['graph'] for r in records]
  assert len(ids) == len(set(ids)) == 600
  # Each graph's record equals the uninterrupted contract run's.
  full = {r['graph']: r for r in _journal(contract_run[0] / 'journal.jsonl')}
  assert all(r == full[r['graph']] for r in records)
  manifest = json.loads((w / 'manifest.json').read_text())
  assert manifest['resumed_graphs'] == lines_before
  assert manifest['graphs_run_now'] == 600 - lines_before


@pytest.mark.slow
def test_binary_with_a_configured_solver_policy(tmp_path, bundled_index):
  """:tiny with the agent solver; the policy is the registry's scripted kind
  (one search, then an answer): the binary's LLM path, wiring only."""
  w = _workdir(tmp_path, bundled_index, 'solver')
  search = json.dumps({'name': 'search', 'arguments': {'query': ['x']}})
  script = (f'<tool_call>{search}</tool_call>', '<answer>1948</answer>')
  overrides = (
      '--config.max_graphs=40', '--config.roles.solver=agent',
      '--config.llm.solver.kind=scripted', '--config.loop.min_solver_calls=1',
      f'--config.llm.solver.script={json.dumps(list(script))}',
  )  # fmt: skip
  subprocess.run(_cmd(w, *overrides), cwd=REPO, env=_env(), check=True,
                 timeout=300)  # fmt: skip
  decisions = [json.loads(l) for l in open(w / 'decisions.jsonl')]
  kinds = {d['decision'] for d in decisions}
  assert kinds & {'accepted', 'returned:invalid_after_long_failure'}
  manifest = json.loads((w / 'manifest.json').read_text())
  assert manifest['roles']['solver'] == 'agent (scripted)'
  assert list((w / 'llm_cache' / 'solver').glob('*/*.json'))
