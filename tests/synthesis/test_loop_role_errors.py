"""A failing role never decides: the loop returns the proposal with why."""

import asyncio

import pytest

from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.llm import scripted
from search_agent.synthesis import funnel as funnel_lib
from search_agent.synthesis import llm_roles
from search_agent.synthesis import loop as loop_lib
from search_agent.synthesis import roles


class _Passes:
  passed, failed, reason = True, None, ''

  def to_json(self):
    return {'passed': True}


class _Controller:

  def check_batch(self, proposals):
    return [_Passes() for _ in proposals]


def _fail(what):

  async def fail(*args, **kwargs):
    del args, kwargs
    raise protocol.ReplyFormatError(f'{what}: no usable reply')

  return fail


class _Critic:

  def __init__(self, fail_review=False, fail_validity=False):
    self.fail_review, self.fail_validity = fail_review, fail_validity

  async def review(self, proposal, graph):
    del proposal, graph
    if self.fail_review:
      raise protocol.ReplyFormatError('critic: no usable reply')
    dims = {d: 'excellent' for d in roles.CRITIC_DIMENSIONS}
    return roles.Review(ratings=dims, diagnosis='', score=1.0)

  async def validity(self, proposal, attempt, samples):
    del proposal, attempt, samples
    if self.fail_validity:
      raise protocol.LLMError('HTTP 500')
    return []


class _Solver:

  def __init__(self, calls=60, fail=False):
    self.calls, self.fail = calls, fail

  async def solve(self, proposal):
    del proposal
    if self.fail:
      raise protocol.LLMError('timeout')
    return roles.Attempt(answer='x', correct=self.calls >= 60, calls=self.calls)


class _Raises:

  def __init__(self, method):
    setattr(self, method, _fail(method))


@pytest.fixture(scope='module')
def graph(prepared):
  return prepared.graphs[0]


def _decisions(graph, generator, **roles_kw):
  loop = loop_lib.SynthesisLoop(
      generator, _Controller(), loop_lib.LoopConfig(max_revisions=1),
      **roles_kw,
  )  # fmt: skip
  (record,) = asyncio.run(loop.run_chunk([graph]))
  return record


def _template(prepared):
  return roles.TemplateGenerator(prepared.docs, prepared.types)


def test_generator_failure_is_a_returned_proposal(graph):
  record = _decisions(graph, _Raises('propose'))
  (e,) = record['decisions']
  assert e['decision'] == 'returned:generator:llm_error'
  assert 'ReplyFormatError: propose: no usable reply' in e['reason']
  f = funnel_lib.funnel([record])
  assert f['role_errors'] == {'returned:generator:llm_error': 1}


@pytest.mark.parametrize(
    'kw, decision',
    [
        (dict(critic=_Critic(fail_review=True)), 'returned:critic_error'),
        (dict(critic=_Critic(), solver=_Solver(fail=True)),
         'returned:solver_error'),
        (dict(critic=_Critic(fail_validity=True), solver=_Solver(calls=70)),
         'returned:validity_error'),
        (dict(verifier=_Raises('verify')), 'returned:verification_error'),
        (dict(claim_selector=_Raises('select')), 'returned:judge_error'),
    ],
)  # fmt: skip
def test_role_failure_returns_the_proposal(prepared, graph, kw, decision):
  if decision == 'returned:validity_error':
    kw['solver'] = _Solver(calls=70)
    kw['solver'].solve = _wrong(70)
  record = _decisions(graph, _template(prepared), **kw)
  (e,) = record['decisions']
  assert e['decision'] == decision and e['reason']
  assert not record['accepted'] and not record['hard_candidates']
  f = funnel_lib.funnel([record])
  assert f['role_errors'] == {decision: 1}
  if decision == 'returned:critic_error':
    assert f['stages'][2]['count'] == 0  # never counted as excellent


def _wrong(calls):

  async def solve(proposal):
    del proposal
    return roles.Attempt(answer='y', correct=False, calls=calls)

  return solve


def test_generator_reply_with_wrong_field_types_is_reasked(prepared, graph):
  llm = role_client.RoleLLM(
      scripted.ScriptedLLM([
          '{"question": "Which film?", "paths_used": 2}',
          '{"question": "Which film?", "paths_used": [1]}',
      ]),
      'generator',
  )  # fmt: skip
  gen = llm_roles.LLMGenerator(llm, prepared.docs)
  p = asyncio.run(gen.propose(graph, 0, ()))
  assert p.question == 'Which film?' and p.meta['paths_used'] == [1]
  assert llm.stats.parse_failures == 1 and llm.stats.parse_retries == 1
