"""Figure 8's solver rules, the response cache and the Iris checks."""

import asyncio
import json

import pytest

from search_agent.llm import protocol
from search_agent.llm.scripted import ScriptedLLM
from search_agent.synthesis import cache as cache_lib
from search_agent.synthesis import iris
from search_agent.synthesis import roles
from search_agent.synthesis.controller import Controller
from search_agent.synthesis.loop import LoopConfig
from search_agent.synthesis.loop import SynthesisLoop
from search_agent.synthesis.schema import Proposal


class _Solver:
  name = 'stub'

  def __init__(self, attempts):
    self.attempts = list(attempts)

  async def solve(self, proposal):
    return self.attempts.pop(0)


class _Critic:
  name = 'stub'

  def __init__(self, valid):
    self.valid = valid

  async def review(self, proposal, graph):
    dims = roles.CRITIC_DIMENSIONS
    return roles.Review(ratings={d: 'excellent' for d in dims}, score=1.0)

  async def validity(self, proposal, attempt, samples):
    return [roles.Validity(valid=v, confidence='high') for v in self.valid]


def _attempt(correct, calls):
  return roles.Attempt(
      answer='x', correct=correct, calls=calls, recent_actions=('search(q)',)
  )


@pytest.fixture(scope='module')
def graph(prepared):
  # A graph with several paths, so revisions have questions left.
  return next(g for g in prepared.graphs if len(g.paths) >= 4)


@pytest.mark.parametrize(
    'attempt,valid,decision',
    [
        (_attempt(True, 60), (), 'accepted'),
        (_attempt(True, 10), (), 'too_easy'),
        (_attempt(False, 10), (), 'returned:solver_wrong'),
        (_attempt(False, 60), (True, True, True), 'hard_candidate'),
        (_attempt(False, 60), (True, False, True),
         'returned:invalid_after_long_failure'),
    ],
)  # fmt: skip
def test_solver_rules(prepared, engine, graph, attempt, valid, decision):
  loop = SynthesisLoop(
      roles.TemplateGenerator(prepared.docs, prepared.types),
      Controller(prepared.docs, prepared.claims, engine),
      LoopConfig(max_revisions=1, min_solver_calls=50),
      critic=_Critic(valid),
      solver=_Solver([attempt]),
  )
  (rec,) = asyncio.run(loop.run_chunk([graph]))
  (entry,) = rec['decisions']
  assert entry['controller']['passed'], entry['reason']
  assert entry['decision'] == decision
  assert (rec['accepted'] != []) == (decision == 'accepted')
  assert (rec['hard_candidates'] != []) == (decision == 'hard_candidate')


def test_feedback_reaches_the_next_revision(prepared, engine, graph):
  seen = []

  class _Gen(roles.TemplateGenerator):

    async def propose(self, g, revision, feedback):
      seen.append(list(feedback))
      return await super().propose(g, revision, feedback)

  loop = SynthesisLoop(
      _Gen(prepared.docs, prepared.types),
      Controller(prepared.docs, prepared.claims, engine),
      LoopConfig(max_revisions=2, min_solver_calls=50),
      critic=_Critic(()),
      solver=_Solver([_attempt(False, 7), _attempt(True, 70)]),
  )
  (rec,) = asyncio.run(loop.run_chunk([graph]))
  assert [e['decision'] for e in rec['decisions']] == [
      'returned:solver_wrong', 'accepted',
  ]  # fmt: skip
  assert seen[0] == []
  (fb,) = seen[1]
  assert fb['calls'] == 7 and fb['answer'] == 'x'
  assert fb['recent_actions'] == ['search(q)']


def test_cache_replays_and_keeps_samples_apart(tmp_path):
  counter = iter(range(100))
  live = ScriptedLLM(lambda m: f'reply {next(counter)}', name='m')
  cached = cache_lib.CachedLLM(live, tmp_path)
  msgs = [{'role': 'user', 'content': 'hi'}]
  greedy = protocol.SamplingParams(temperature=0.0)
  hot = protocol.SamplingParams(temperature=1.0)

  async def calls(llm):
    out = []
    for params in (greedy, greedy, hot, hot):
      (c,) = await llm.chat(msgs, params)
      out.append(c.text)
    return out

  first = asyncio.run(calls(cached))
  assert first == ['reply 0', 'reply 0', 'reply 1', 'reply 2']
  assert (cached.hits, cached.misses) == (1, 3)
  replay = cache_lib.CachedLLM(ScriptedLLM([], name='m'), tmp_path)
  assert asyncio.run(calls(replay)) == first
  other = cache_lib.CachedLLM(ScriptedLLM(['new'] * 4, name='other'), tmp_path)
  assert asyncio.run(calls(other))[0] == 'new'  # the model is in the key


def test_surviving_names_check():
  names = ['Christina Broom', 'Fulham Town Hall (London)', 'George Edwards']
  q = 'Which hall did the architect of a building photographed by Christina Broom design?'
  assert iris.surviving_names(q, names) == ['Christina Broom']
  q2 = 'Which hall was designed by an architect whom a pioneering photographer shot?'
  assert iris.surviving_names(q2, names) == []
  assert iris.surviving_names('What is in fulham town hall?', names) == [
      'Fulham Town Hall (London)'
  ]


def test_relation_helpers():
  rels = [
      {'subject': 'A', 'relation': 'r', 'object': 'B'},
      {'subject': 'B', 'relation': 'r', 'object': 'Answer'},
      {'subject': 'X', 'relation': 'r', 'object': 'Y'},
  ]
  assert iris.connected_relations(rels, 'Answer') == rels[:2]
  assert iris.coupled(rels[:2]) and not iris.coupled([rels[0], rels[2]])


def test_dual_verification(prepared):
  graph = next(g for g in prepared.graphs if g.paths[0].hops == 1)
  p = Proposal(id='p', graph=graph.id, question='Q?', answer=graph.answer,
               aliases=(), path=graph.paths[0], generator='t')  # fmt: skip
  no_match = ScriptedLLM(lambda m: json.dumps({'match': False}), name='j')
  config = iris.IrisConfig(closed_book_samples=3)

  def reference(replies):
    return ScriptedLLM(list(replies), name='ref')

  wrong, right = 'Answer: nobody', f'Answer: {graph.answer}'
  hard = iris.DualVerifier(reference([wrong] * 3 + [right]), no_match,
                           prepared.docs, config)  # fmt: skip
  ok, why = asyncio.run(hard.verify(p, graph))
  assert ok, why
  easy = iris.DualVerifier(reference([wrong, right, wrong]), no_match,
                           prepared.docs, config)  # fmt: skip
  ok, why = asyncio.run(easy.verify(p, graph))
  assert not ok and 'closed-book in 1 of 3' in why
  unsolvable = iris.DualVerifier(reference([wrong] * 4), no_match,
                                 prepared.docs, config)  # fmt: skip
  ok, why = asyncio.run(unsolvable.verify(p, graph))
  assert not ok and 'not solved with evidence' in why
