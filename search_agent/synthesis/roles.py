"""The roles of the synthesis loop and their programmatic stand-ins.

Every LLM role (generator, critic, solver, verifier) implements one of the
protocols below; `llm_roles.py` holds the versions that call `llm/`. The
template generator is the :tiny generator (no LLM).
"""

import dataclasses
import hashlib
from typing import Any, Protocol, Sequence

from search_agent.agent import task as task_lib
from search_agent.corpus.record import Document
from search_agent.synthesis import phrasings
from search_agent.synthesis import templates
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import Proposal

CRITIC_DIMENSIONS = (
    'wording',
    'identifying_information',
    'constraint_clarity',
    'difficulty',
    'grounding',
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Review:
  """The critic's review of one proposal.

  Attributes:
    ratings: Dimension → 'excellent' | 'good' | 'fair' | 'poor'.
    diagnosis: What to fix, for the generator.
    score: Ranking score among excellent proposals (higher first).
  """

  ratings: dict[str, str]
  diagnosis: str = ''
  score: float = 0.0

  @property
  def excellent(self) -> bool:
    return all(self.ratings.get(d) == 'excellent' for d in CRITIC_DIMENSIONS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Attempt:
  """One solver rollout on a proposal.

  Attributes:
    answer: The solver's final answer (None if it gave none).
    correct: Judged equal to the reference answer.
    calls: Search + visit calls made.
    recent_actions: The last tool calls, as short strings (feedback).
    status: The rollout's end status.
    trajectory: The rollout (agent/trajectory.py JSON), when kept.
  """

  answer: str | None
  correct: bool
  calls: int
  recent_actions: tuple[str, ...] = ()
  status: str = ''
  trajectory: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Validity:
  """One sampled critic review of a failed long attempt."""

  valid: bool
  confidence: str  # 'high' | 'medium' | 'low'
  reason: str = ''


class Generator(Protocol):
  name: str

  async def propose(
      self,
      graph: EvidenceGraph,
      revision: int,
      feedback: Sequence[dict[str, Any]],
  ) -> Proposal | None:
    """The next proposal for `graph`, or None when it has nothing left."""
    ...


class Critic(Protocol):
  name: str

  async def review(self, proposal: Proposal, graph: EvidenceGraph) -> Review:
    ...

  async def validity(
      self, proposal: Proposal, attempt: Attempt, samples: int
  ) -> list[Validity]:
    ...


class Solver(Protocol):
  name: str

  async def solve(self, proposal: Proposal) -> Attempt:
    ...


class Verifier(Protocol):
  """RL-pool verification: constraints supported, no alternative answer."""

  name: str

  async def verify(
      self, proposal: Proposal, graph: EvidenceGraph
  ) -> tuple[bool, str]:
    ...


class ClaimSelector(Protocol):
  """Required-claim selection for the RL reward (rewards/claims.py)."""

  async def select(
      self, proposal: Proposal, graph: EvidenceGraph
  ) -> tuple[task_lib.Claim, ...]:
    ...


def proposal_id(graph_id: str, revision: int, question: str) -> str:
  digest = hashlib.sha1(question.encode('utf-8')).hexdigest()[:8]
  return f'{graph_id}-r{revision}-{digest}'


class TemplateGenerator:
  """Template questions, one path per revision, longest path first.

  A returned proposal makes the next revision use the graph's next path
  (the feedback's reason is recorded, not parsed). The question asks the
  path's last relation in one of its phrasings (synthesis/phrasings.py),
  never in one of `heldout` (the phrasings kept out of training).
  """

  name = 'template'

  def __init__(
      self,
      docs: dict[str, Document],
      types: dict[str, str],
      heldout: frozenset[str] = frozenset(),
  ):
    self._docs = docs
    self._types = types
    self._heldout = heldout

  async def propose(self, graph, revision, feedback):
    del feedback
    ordered = sorted(graph.paths, key=lambda p: -p.hops)
    if revision >= len(ordered):
      return None
    path = ordered[revision]
    start = self._docs[path.start]
    phrasing = phrasings.choose(
        path.claims[-1].relation, phrasings.path_key(path), self._heldout
    )
    question = templates.question(
        path, start.title, self._types[path.start], phrasing
    )
    answer_title = (
        self._docs[path.answer_doc].title if path.answer_doc else None
    )
    return Proposal(
        id=proposal_id(graph.id, revision, question),
        graph=graph.id,
        question=question,
        answer=path.answer,
        aliases=templates.answer_forms(path.answer, answer_title),
        path=path,
        generator='template',
        revision=revision,
        meta={
            'starting_entities': [start.title],
            'template': 'nested_np',
            'phrasing': phrasing,
            'start_phrase': templates.start_phrase(
                start.title, self._types[path.start]
            ),
        },
    )
