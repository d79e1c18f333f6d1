"""Every synthesis LLM role against a really served tiny model, over HTTP.

A module-scoped `python -m search_agent.serving` process (random-init tiny
MoE on CPU, tests/llm/served_model.py) answers through the same OpenAI
client a vLLM or SGLang endpoint gets. Its replies are noise: each role
must re-ask, count, and end in an error (never a verdict) or, where the
recipe says so, in a returned proposal with its reason.
"""

import asyncio
import json
import pathlib
import subprocess
import sys

import pytest

from search_agent.llm import protocol
from search_agent.rewards import judging
from search_agent.synthesis import controller as controller_lib
from search_agent.synthesis import iris
from search_agent.synthesis import llm_roles
from search_agent.synthesis import loop as loop_lib
from search_agent.synthesis import roles as roles_lib
from search_agent.synthesis import solver as solver_lib
from tests.llm import served_model

pytestmark = [pytest.mark.slow, pytest.mark.maxtext]
REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def endpoint():
  with served_model.serve() as url:
    yield url


@pytest.fixture(scope='module')
def probe(prepared):
  """A graph with a template question (programmatic)."""
  template = roles_lib.TemplateGenerator(prepared.docs, prepared.types)
  for graph in prepared.graphs:
    p = asyncio.run(template.propose(graph, 0, ()))
    if p is not None:
      return graph, p
  raise AssertionError('no graph has a template question')


def _run(coro):
  return asyncio.run(coro)


def _assert_reasked(llm, calls_per_ask: int = 2):
  """Every reply failed to parse, was asked again, and the ask gave up."""
  s = llm.stats
  assert s.calls >= calls_per_ask and s.failed_calls == 0
  # Sibling asks of a failed gather (votes, samples) are cancelled.
  assert s.calls == s.completions + s.cancelled_calls
  assert s.parse_failures == s.completions
  assert s.parse_errors >= 1 and s.parse_retries >= s.parse_errors
  assert s.length_finishes >= 1  # noise runs to the 16-token budget
  assert llm.report()['http_requests'] == s.calls


def test_claim_extractor_fails_the_page_and_falls_back(endpoint, prepared):
  llm = served_model.role(endpoint, 'extractor')
  ex = llm_roles.LLMClaimExtractor(llm, 2, fallback='pattern')
  docs = [d for d in prepared.docs.values() if d.links][:2]
  got = ex(docs, {})
  assert ex.report()['failed_pages'] == 2
  assert ex.report()['fallback_pages'] == 2 and set(got) == {
      d.doc_id for d in docs
  }
  _assert_reasked(llm, 4)
  strict = llm_roles.LLMClaimExtractor(llm, 2)
  assert strict(docs[:1], {}) == {docs[0].doc_id: []}


def test_generator_unusable_proposal_returns_with_reason(
    endpoint, prepared, engine, probe
):
  graph, _ = probe
  llm = served_model.role(endpoint, 'generator')
  gen = llm_roles.LLMGenerator(llm, prepared.docs)
  loop = loop_lib.SynthesisLoop(
      gen,
      controller_lib.Controller(prepared.docs, prepared.claims, engine),
      loop_lib.LoopConfig(max_revisions=1),
  )
  (record,) = _run(loop.run_chunk([graph]))
  (entry,) = record['decisions']
  assert entry['decision'] == 'returned:generator:llm_error'
  assert 'no usable reply in 2 attempt' in entry['reason']
  assert not record['accepted']
  _assert_reasked(llm)


def test_critic_review_and_validity_raise(endpoint, prepared, probe):
  graph, proposal = probe
  llm = served_model.role(endpoint, 'critic')
  critic = llm_roles.LLMCritic(llm, prepared.docs)
  with pytest.raises(judging.JudgeReplyError, match="role 'critic'"):
    _run(critic.review(proposal, graph))
  attempt = roles_lib.Attempt(answer='x', correct=False, calls=60)
  with pytest.raises(protocol.ReplyFormatError):
    _run(critic.validity(proposal, attempt, 2))
  _assert_reasked(llm)


def test_critic_failure_returns_the_proposal(endpoint, prepared, engine, probe):
  graph, _ = probe
  llm = served_model.role(endpoint, 'critic', parse_retries=0)
  loop = loop_lib.SynthesisLoop(
      roles_lib.TemplateGenerator(prepared.docs, prepared.types),
      controller_lib.Controller(prepared.docs, prepared.claims, engine),
      loop_lib.LoopConfig(max_revisions=1),
      critic=llm_roles.LLMCritic(llm, prepared.docs),
  )
  (record,) = _run(loop.run_chunk([graph]))
  decisions = {e['decision'] for e in record['decisions']}
  assert decisions <= {'returned:critic_error'} | {
      d for d in decisions if d.startswith('returned:controller')
  }
  assert not record['accepted']


def test_rl_pool_verifier_raises(endpoint, prepared, engine, probe):
  graph, proposal = probe
  llm = served_model.role(endpoint, 'verifier')
  verifier = llm_roles.LLMVerifier(llm, engine, prepared.docs)
  with pytest.raises(judging.JudgeReplyError, match='verifier|role'):
    _run(verifier.verify(proposal, graph))
  _assert_reasked(llm)


def test_claim_judge_selection_raises_with_votes(endpoint, prepared, probe):
  graph, proposal = probe
  llm = served_model.role(endpoint, 'judge', parse_retries=0)
  selector = llm_roles.JudgeClaimSelector(llm, prepared.docs)
  with pytest.raises(judging.JudgeReplyError):
    _run(selector.select(proposal, graph))
  s = llm.stats
  assert s.parse_failures >= 1 and s.calls == 5  # the 5 selection votes
  assert s.calls == s.completions + s.cancelled_calls + s.failed_calls


def test_agent_solver_runs_the_served_policy(endpoint, engine, probe):
  _, proposal = probe
  policy = served_model.role(endpoint, 'solver', max_tokens=24)
  judge = served_model.role(endpoint, 'judge')
  solver = solver_lib.AgentSolver(policy, engine, judge=judge)
  attempt = _run(solver.solve(proposal))
  # Noise never answers: no judge call, a wrong attempt, not an error.
  assert attempt.correct is False and attempt.answer is None
  assert attempt.status == 'max_tokens' and policy.stats.calls >= 1
  assert judge.stats.calls == 0


def test_iris_generator_and_dual_verifier(endpoint, prepared, engine, probe):
  graph, proposal = probe
  gen_llm = served_model.role(endpoint, 'generator')
  gen = iris.IrisGenerator(gen_llm, engine, prepared.docs)
  with pytest.raises(judging.JudgeReplyError):
    _run(gen.propose(graph, 0, ()))
  _assert_reasked(gen_llm)
  ref = served_model.role(endpoint, 'reference', max_tokens=12)
  judge = served_model.role(endpoint, 'judge')
  verifier = iris.DualVerifier(
      ref, judge, prepared.docs, iris.IrisConfig(closed_book_samples=2)
  )
  try:
    ok, reason = _run(verifier.verify(proposal, graph))
  except protocol.ReplyFormatError:
    assert judge.stats.parse_errors >= 1
  else:
    # Every closed-book reply was empty or exactly wrong: no judge needed.
    assert not ok and reason
  assert ref.stats.calls >= 2


RECIPE_ROLES = {'extractor', 'generator', 'critic', 'solver', 'judge'}


@pytest.mark.parametrize(
    'variant, names',
    [
        ('tiny,served', RECIPE_ROLES | {'verifier'}),
        ('tiny,iris,served', RECIPE_ROLES | {'reference'}),
    ],
)
def test_synthesis_run_contract(tmp_path, variant, names):
  """The issue's contract: tiny,served exits 0, every role called."""
  workdir = tmp_path / 'syn'
  out = subprocess.run(
      [sys.executable, '-m', 'search_agent.synthesis.run',
       f'--config=tpu_configs/synthesis.py:{variant}',
       f'--workdir={workdir}'],
      cwd=REPO, capture_output=True, text=True, timeout=900,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  report = json.loads((workdir / 'funnel.json').read_text())
  roles = report['roles']
  assert set(roles) == names
  for name, r in roles.items():
    assert r['calls'] > 0, name
    assert r['http_requests'] > 0 and r['base_url'].endswith('/v1'), name
    for key in ('parse_failures', 'parse_retries', 'http_retries'):
      assert key in r, (name, key)
  assert roles['generator']['parse_failures'] > 0
  assert report['funnel']['decisions'] == {
      'returned:generator:llm_error': report['funnel']['stages'][0]['count']
  }
  probes = report['role_check']['probes']
  assert probes['critic']['outcome'] == 'unparsable'
  assert probes['solver']['outcome'] == 'ok'
  assert report['roles']['extractor']['pages']['fallback_pages'] > 0
  assert 'LLM roles' in (workdir / 'funnel.md').read_text()
  log = (workdir / 'served.log').read_text()
  assert 'serving tiny' in log
