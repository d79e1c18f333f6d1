"""The LLM-role loop's wiring with scripted clients (never a model test)."""

import json
import shutil

import pytest

from search_agent.synthesis import config as config_lib
from search_agent.synthesis import job as job_lib
from search_agent.synthesis import role_builders
from tests.synthesis import scripted_roles
from tpu_configs import synthesis as synthesis_config


def _job(variant, tmp_path, **loop):
  c = synthesis_config.get_config(variant)
  c.anchor.num_seeds = 40
  c.max_graphs = 6
  c.progress = False
  c.loop.min_solver_calls = 2
  c.loop.update(loop)
  c.cache_dir = str(tmp_path / 'cache')
  return config_lib.job_from_config(c)


def _run(job, workdir, llms, bundled_index):
  if not (workdir / 'index').exists():
    shutil.copytree(bundled_index, workdir / 'index')
  return job_lib.run_job(job, workdir, role_builders.LLMRoles(llms))


def _decisions(workdir):
  return [json.loads(l) for l in open(workdir / 'decisions.jsonl')]


@pytest.mark.slow
def test_recipe_loop_wiring_and_cache(tmp_path, bundled_index):
  job = _job('recipe', tmp_path)
  llms = scripted_roles.recipe_llms()
  report = _run(job, tmp_path / 'a', llms, bundled_index)
  decisions = [d['decision'] for d in _decisions(tmp_path / 'a')]
  assert 'returned:critic' in decisions
  assert {'accepted', 'hard_candidate'} & set(decisions)
  journal = [json.loads(l) for l in open(tmp_path / 'a' / 'journal.jsonl')]
  entries = [e for r in journal for e in r['decisions']]
  solved = [e for e in entries if isinstance(e.get('solver'), dict)]
  assert solved and all(e['solver']['calls'] == 2 for e in solved)
  assert all(e['solver']['trajectory']['messages'] for e in solved)
  for e in entries:
    if e['decision'] == 'accepted':
      assert e['required_claims'] and e['critic']['ratings']
  tasks = [json.loads(l) for n in ('train', 'heldout')
           for l in open(tmp_path / 'a' / f'tasks.{n}.jsonl')]  # fmt: skip
  assert len(tasks) == report['funnel']['stages'][-1]['count']
  for t in tasks:
    assert t['meta']['required_claims'] == 'judge' and t['claims']
    assert t['meta']['generator'] == 'llm:s-generator'
  manifest = json.loads((tmp_path / 'a' / 'manifest.json').read_text())
  assert manifest['roles']['critic'].startswith('llm')
  # A rerun elsewhere with the same cache makes no model call at all.
  again = scripted_roles.refusing(llms)
  _run(job, tmp_path / 'b', again, bundled_index)
  for n in ('tasks.train.jsonl', 'tasks.heldout.jsonl', 'decisions.jsonl'):
    assert (tmp_path / 'a' / n).read_text() == (tmp_path / 'b' / n).read_text()


@pytest.mark.slow
def test_iris_loop_wiring(tmp_path, bundled_index):
  c = synthesis_config.get_config('iris')
  c.anchor.num_seeds = 40
  c.max_graphs = 4
  c.progress = False
  c.roles.extractor = 'pattern'
  c.roles.critic = 'none'
  c.roles.solver = 'none'
  c.roles.claim_selection = 'path'
  job = config_lib.job_from_config(c)
  _run(job, tmp_path / 'w', scripted_roles.iris_llms(), bundled_index)
  decisions = _decisions(tmp_path / 'w')
  kinds = [d['decision'] for d in decisions]
  assert kinds.count('returned:generator:abstraction') >= 1
  assert 'entity names survive' in decisions[0]['reason']
  journal = [json.loads(l) for l in open(tmp_path / 'w' / 'journal.jsonl')]
  verified = [e for r in journal for e in r['decisions'] if 'verification' in e]
  assert verified
  for e in verified:
    q = e['proposal']['question']
    assert '[v2]' not in q and e['proposal']['meta']['entity_graph']
    assert e['verification']['passed'] == (e['decision'] == 'accepted')
  # Every task's evidence and claims are its own question's reasoning path.
  tasks = [json.loads(l) for n in ('train', 'heldout')
           for l in open(tmp_path / 'w' / f'tasks.{n}.jsonl')]  # fmt: skip
  assert tasks
  for t in tasks:
    gen = t['meta']['generator_meta']
    steps = gen['reasoning_path']
    page = {(r['subject'], r['object']): r['page'] for r in gen['entity_graph']}
    assert sorted((c['relation'], c['object']) for c in t['claims']) == sorted(
        (s['relation'], s['object']) for s in steps
    )
    own_pages = {page[s['subject'], s['object']] for s in steps}
    answer_page = {t['meta']['answer_page']} - {None}
    assert set(t['evidence']) == own_pages | answer_page
    assert {h['subject'] for h in t['meta']['hop_claims']} == own_pages
