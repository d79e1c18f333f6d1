"""role_check: one probe per built role; failed calls stop the run."""

import asyncio

import pytest

from search_agent.llm import protocol
from search_agent.synthesis import role_check
from search_agent.synthesis import roles


class _Critic:

  def __init__(self, error=None):
    self.error = error

  async def review(self, proposal, graph):
    del proposal, graph
    if self.error:
      raise self.error
    dims = {d: 'good' for d in roles.CRITIC_DIMENSIONS}
    return roles.Review(ratings=dims, diagnosis='meh', score=0.5)

  async def validity(self, proposal, attempt, samples):
    del proposal, attempt
    return [roles.Validity(valid=False, confidence='low')] * samples


class _Verifier:

  async def verify(self, proposal, graph):
    del proposal, graph
    raise protocol.ReplyFormatError('no JSON object')


class _Selector:

  async def select(self, proposal, graph):
    del proposal, graph
    raise protocol.LLMError('HTTP 404: no such model')


def test_each_role_is_probed_once_and_outcomes_recorded(prepared):
  built = {
      'generator': roles.TemplateGenerator(prepared.docs, prepared.types),
      'critic': _Critic(),
      'verifier': _Verifier(),
      'claim_selector': _Selector(),
  }
  got = asyncio.run(role_check.check(built, None, prepared))
  probes = got['probes']
  assert set(probes) == {'critic', 'critic_validity', 'verifier',
                         'claim_selector'}  # fmt: skip
  assert probes['critic'] == {
      'outcome': 'ok',
      'result': {'ratings': {d: 'good' for d in roles.CRITIC_DIMENSIONS},
                 'diagnosis': 'meh', 'score': 0.5},
  }  # fmt: skip
  assert probes['verifier']['outcome'] == 'unparsable'
  assert probes['claim_selector']['outcome'] == 'failed'
  assert got['question'] and got['graph']
  with pytest.raises(role_check.RoleCheckError, match='claim_selector.*404'):
    role_check.raise_on_failed(got)
  del probes['claim_selector']
  role_check.raise_on_failed(got)  # unparsable is not a failure


def test_no_graph_means_no_probe(prepared):
  empty = type(prepared)(**{**prepared.__dict__, 'graphs': []})
  got = asyncio.run(role_check.check({'critic': _Critic()}, None, empty))
  assert 'skipped' in got
  role_check.raise_on_failed(got)
