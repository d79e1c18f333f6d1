"""The task synthesis loop (open recipe, Figures 7 and 8).

Graphs are processed in chunks. In each round every active graph proposes
one question; the controller checks the round's proposals as one batch;
the critic reviews those that pass (below excellent on any dimension →
back with its diagnosis); the excellent ones, in the critic's ranking,
get solver attempts within each graph's solver budget:
  correct, >= min_calls        accepted
  correct, <  min_calls        back as too easy
  wrong,   <  min_calls        back with rollout feedback
  wrong,   >= min_calls        `hard_reviews` sampled critic reviews of
                               question + attempt; all valid with high
                               confidence → kept apart as a hard candidate
In RL-pool mode an accepted proposal is verified once more (constraints
against the evidence, alternative answers) and goes back when that fails.
A proposal the generator itself rejected (Iris's abstraction check) goes
back before the controller.

A role that fails (its call failed, or no reply parsed after the role's
re-asks: `LLMError`) never decides anything: the proposal goes back with
`returned:<role>_error` and the error as its reason (the generator's:
`returned:generator:llm_error`), so a failed critic, verifier or claim
judge keeps the proposal out of the tasks (and out of RL's pool). A graph
stops when it reaches `max_tasks_per_graph`, its revision budget,
or its generator has nothing left. Without a critic or solver (the :tiny
run) those stages are skipped and recorded as such.
"""

import asyncio
import dataclasses
from typing import Any, Sequence

from search_agent.llm import protocol
from search_agent.synthesis import roles
from search_agent.synthesis.controller import Controller
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import Proposal


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoopConfig:
  """Budgets and thresholds of the loop.

  Attributes:
    max_revisions: Proposals per evidence graph.
    max_tasks_per_graph: Accepted tasks after which a graph stops.
    max_solver_attempts: Solver rollouts per evidence graph.
    min_solver_calls: Search + visit calls an accepted attempt needs (seed:
      50).
    hard_reviews: Critic reviews of a long failed attempt.
    max_concurrency: Role calls in flight at once.
  """

  max_revisions: int = 4
  max_tasks_per_graph: int = 1
  max_solver_attempts: int = 3
  min_solver_calls: int = 50
  hard_reviews: int = 3
  max_concurrency: int = 8


@dataclasses.dataclass
class _State:
  graph: EvidenceGraph
  revision: int = 0
  solver_attempts: int = 0
  feedback: list = dataclasses.field(default_factory=list)
  decisions: list = dataclasses.field(default_factory=list)
  accepted: list = dataclasses.field(default_factory=list)
  asked: set = dataclasses.field(default_factory=set)
  hard: list = dataclasses.field(default_factory=list)
  done: bool = False


class SynthesisLoop:
  """Runs generator → controller → critic → solver over evidence graphs."""

  def __init__(
      self,
      generator: roles.Generator,
      controller: Controller,
      config: LoopConfig = LoopConfig(),
      *,
      critic: roles.Critic | None = None,
      solver: roles.Solver | None = None,
      verifier: roles.Verifier | None = None,
      claim_selector: roles.ClaimSelector | None = None,
  ):
    self.generator = generator
    self.controller = controller
    self.config = config
    self.critic = critic
    self.solver = solver
    self.verifier = verifier
    self.claim_selector = claim_selector
    self._sem = asyncio.Semaphore(config.max_concurrency)

  async def _bounded(self, coro):
    async with self._sem:
      return await coro

  async def run_chunk(self, graphs: Sequence[EvidenceGraph]) -> list[dict]:
    """Processes graphs to completion; one record per graph, input order."""
    states = [_State(graph=g) for g in graphs]
    while True:
      active = [s for s in states if not s.done]
      if not active:
        break
      proposals = await asyncio.gather(*(
          self._bounded(self._propose(s)) for s in active
      ))  # fmt: skip
      live = []
      for s, p in zip(active, proposals):
        if p is None:
          s.done = True
        else:
          live.append((s, p))
          s.revision += 1
      await self._round(live)
      for s in active:
        if (
            len(s.accepted) >= self.config.max_tasks_per_graph
            or s.revision >= self.config.max_revisions
        ):
          s.done = True
    return [self._record(s) for s in states]

  async def _propose(self, s: _State) -> Proposal | None:
    """The generator's proposal; a failed generator's as a rejected one."""
    try:
      return await self.generator.propose(
          s.graph, s.revision, tuple(s.feedback)
      )
    except protocol.LLMError as e:
      return Proposal(
          id=roles.proposal_id(s.graph.id, s.revision, f'error{s.revision}'),
          graph=s.graph.id,
          question='',
          answer=s.graph.answer,
          aliases=(),
          path=s.graph.paths[0],
          generator=getattr(self.generator, 'name', 'generator'),
          revision=s.revision,
          meta={'rejected': 'llm_error', 'reason': _error(e)},
      )

  async def _round(self, live: list[tuple[_State, Proposal]]) -> None:
    checked = []
    for s, p in live:
      entry = {'proposal': p.to_json(), 'controller': {'passed': False}}
      if p.meta.get('rejected'):  # the generator's own check (Iris)
        self._decide(
            s, entry, f'returned:generator:{p.meta["rejected"]}',
            p.meta.get('reason', ''),
        )  # fmt: skip
      elif p.question in s.asked:
        self._decide(
            s, entry, 'returned:repeated', 'the same question was proposed'
            ' before for this graph; revise it',
        )  # fmt: skip
      else:
        s.asked.add(p.question)
        checked.append((s, p))
    live = checked
    verdicts = self.controller.check_batch([p for _, p in live])
    passed = []
    for (s, p), v in zip(live, verdicts):
      entry = {'proposal': p.to_json(), 'controller': v.to_json()}
      if not v.passed:
        self._decide(s, entry, f'returned:controller:{v.failed}', v.reason)
      else:
        passed.append((s, p, entry))
    reviews = await asyncio.gather(*(
        self._bounded(_or_error(self.critic.review(p, s.graph)))
        for s, p, _ in passed
    )) if self.critic else [None] * len(passed)  # fmt: skip
    excellent = []
    for (s, p, entry), review in zip(passed, reviews):
      if isinstance(review, protocol.LLMError):
        entry['critic'] = {'error': _error(review)}
        self._decide(s, entry, 'returned:critic_error', _error(review))
      elif review is None:
        entry['critic'] = 'skipped (no critic configured)'
        excellent.append((0.0, s, p, entry))
      elif not review.excellent:
        entry['critic'] = dataclasses.asdict(review)
        self._decide(s, entry, 'returned:critic', review.diagnosis)
      else:
        entry['critic'] = dataclasses.asdict(review)
        excellent.append((review.score, s, p, entry))
    excellent.sort(key=lambda x: -x[0])
    if self.critic is not None:
      for rank, (_, s, p, entry) in enumerate(excellent):
        entry['critic_rank'] = rank  # within this round's batch
    await asyncio.gather(*(
        self._solve(s, p, entry) for _, s, p, entry in excellent
    ))  # fmt: skip

  async def _solve(self, s: _State, p: Proposal, entry: dict) -> None:
    if self.solver is None:
      entry['solver'] = 'skipped (no solver configured)'
      return await self._accept(s, p, entry)
    if s.solver_attempts >= self.config.max_solver_attempts:
      return self._decide(
          s, entry, 'not_attempted', 'solver budget of the graph spent'
      )
    s.solver_attempts += 1
    attempt = await self._bounded(_or_error(self.solver.solve(p)))
    if isinstance(attempt, protocol.LLMError):
      entry['solver_error'] = _error(attempt)
      return self._decide(s, entry, 'returned:solver_error', _error(attempt))
    entry['solver'] = dataclasses.asdict(attempt)
    long = attempt.calls >= self.config.min_solver_calls
    if attempt.correct and long:
      return await self._accept(s, p, entry)
    if attempt.correct:
      return self._decide(
          s, entry, 'too_easy', f'solved with {attempt.calls} calls', attempt
      )
    if not long:
      return self._decide(
          s,
          entry,
          'returned:solver_wrong',
          f'answered {attempt.answer!r} after {attempt.calls} calls',
          attempt,
      )
    reviews = await self._bounded(_or_error(
        self.critic.validity(p, attempt, self.config.hard_reviews)
        if self.critic
        else _no_reviews()
    ))  # fmt: skip
    if isinstance(reviews, protocol.LLMError):
      entry['validity'] = {'error': _error(reviews)}
      return self._decide(
          s, entry, 'returned:validity_error', _error(reviews), attempt
      )
    entry['validity'] = [dataclasses.asdict(r) for r in reviews]
    if reviews and all(r.valid and r.confidence == 'high' for r in reviews):
      s.hard.append(p.id)
      return self._decide(
          s, entry, 'hard_candidate',
          f'all {len(reviews)} reviews valid with high confidence; kept'
          ' apart, the loop continues with a revision', attempt,
      )  # fmt: skip
    why = (
        'no critic configured to review the long failure'
        if not reviews
        else f'{sum(r.valid and r.confidence == "high" for r in reviews)} of'
        f' {len(reviews)} reviews valid with high confidence'
    )
    self._decide(s, entry, 'returned:invalid_after_long_failure', why, attempt)

  async def _accept(self, s: _State, p: Proposal, entry: dict) -> None:
    if self.verifier is not None:
      got = await self._bounded(_or_error(self.verifier.verify(p, s.graph)))
      if isinstance(got, protocol.LLMError):
        entry['verification'] = {'passed': False, 'error': _error(got)}
        return self._decide(
            s, entry, 'returned:verification_error', _error(got)
        )
      ok, reason = got
      entry['verification'] = {'passed': ok, 'reason': reason}
      if not ok:
        return self._decide(s, entry, 'returned:verification', reason)
    if self.claim_selector is not None:
      required = await self._bounded(
          _or_error(self.claim_selector.select(p, s.graph))
      )
      if isinstance(required, protocol.LLMError):
        entry['required_claims_error'] = _error(required)
        return self._decide(s, entry, 'returned:judge_error', _error(required))
      entry['required_claims'] = [dataclasses.asdict(c) for c in required]
      if not required:
        return self._decide(
            s, entry, 'returned:no_required_claims', 'judge kept no claim'
        )
    s.accepted.append(p.id)
    self._decide(s, entry, 'accepted', '')

  def _decide(self, s, entry, decision, reason, attempt=None) -> None:
    entry['decision'] = decision
    entry['reason'] = reason
    s.decisions.append(entry)
    if decision != 'accepted':
      fb: dict[str, Any] = {'decision': decision, 'reason': reason}
      if attempt is not None:
        fb.update(
            answer=attempt.answer,
            calls=attempt.calls,
            recent_actions=list(attempt.recent_actions),
        )
      s.feedback.append(fb)

  def _record(self, s: _State) -> dict:
    return {
        'graph': s.graph.id,
        'evidence_graph': s.graph.to_json(),
        'decisions': s.decisions,
        'accepted': s.accepted,
        'hard_candidates': s.hard,
    }


async def _no_reviews() -> list:
  return []


async def _or_error(coro):
  """The coroutine's result, or the `LLMError` it raised."""
  try:
    return await coro
  except protocol.LLMError as e:
    return e


def _error(e: BaseException) -> str:
  return f'{type(e).__name__}: {e}'[:500]
