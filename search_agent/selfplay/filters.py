"""The four filters a candidate task passes before any Solver rollout.

In order (the first failure decides; `rewards.searchmaster.FILTERS`):
  tool_use:   fewer than `min_searches` search or `min_opens` open calls;
  format:     the reply does not parse (proposal.parse_proposal) or its
              chain has fewer than `min_chain` evidence items;
  validity:   the Verifier finds the question invalid, the answer
              unsupported by the Proposer's trace, or the chain unsound;
  parametric: the Verifier answers the question without tools.
"""

import dataclasses

from search_agent.agent import trajectory as traj_lib
from search_agent.rewards import searchmaster as sm
from search_agent.selfplay import proposal as proposal_lib
from search_agent.selfplay import verifier as verifier_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class FilterConfig:
  """Filter thresholds (the seed leaves them to its supplement).

  Attributes:
    min_searches: Fewest search calls of a non-shallow proposal.
    min_opens: Fewest open calls.
    min_chain: Fewest evidence items of the chain.
  """

  min_searches: int = 2
  min_opens: int = 1
  min_chain: int = 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class FilterOutcome:
  """What the filters decided about one candidate.

  Attributes:
    failed: The first filter it failed, or None if it passed all four.
    reached: The filters it was checked by, in order.
    proposal: The parsed proposal (None if it did not parse).
    reason: Why it failed ('' if it passed).
  """

  failed: str | None
  reached: tuple[str, ...]
  proposal: proposal_lib.Proposal | None = None
  reason: str = ''


async def check(
    traj: traj_lib.Trajectory,
    verifier: verifier_lib.Verifier,
    cfg: FilterConfig,
    rewards: sm.SearchMasterRewards,
) -> FilterOutcome:
  """Runs the four filters on one Proposer rollout (Verifier errors raise)."""
  reached = ['tool_use']

  def fail(name: str, why: str, prop=None) -> FilterOutcome:
    return FilterOutcome(
        failed=name, reached=tuple(reached), proposal=prop, reason=why
    )

  n_search = sm.search_count(traj, rewards)
  n_open = sm.open_count(traj, rewards)
  if n_search < cfg.min_searches or n_open < cfg.min_opens:
    return fail('tool_use', f'{n_search} searches, {n_open} opens')
  reached.append('format')
  try:
    prop = proposal_lib.parse_proposal(proposal_lib.final_text(traj))
  except proposal_lib.ProposalFormatError as e:
    return fail('format', str(e))
  if len(prop.chain) < cfg.min_chain:
    return fail('format', f'chain of {len(prop.chain)} < {cfg.min_chain}', prop)
  reached.append('validity')
  if not await verifier.valid(prop, proposal_lib.observations(traj)):
    return fail('validity', 'the Verifier rejected the task', prop)
  reached.append('parametric')
  if await verifier.knows(prop.question, prop.answer):
    return fail('parametric', 'the Verifier answers it without tools', prop)
  return FilterOutcome(failed=None, reached=tuple(reached), proposal=prop)
