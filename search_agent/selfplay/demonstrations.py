"""Proposer demonstrations rendered from synthesized multi-hop tasks.

A synthesized task with an evidence path p1 -> p2 -> ... (`Task.evidence`,
one claim per hop in `Task.claims`) becomes one Proposer rollout of the
self-play loop, played by a script through the real ReAct harness and the
real toolbox, so its turns are exactly what the Proposer role is prompted
with (the ECG system prompt, the seed message of p1) and sees (the tools'
observations over the index):

  search(query=[p1])             the seed's own page (names it in a trace)
  search(query=[p_k]), open(p_k)  for each later page of the path
  <chain>                         one <evidence> per claim, doc = its page
  <question>, <answer>            the task's own

The seed is p1's document as `seeds.seed_task` makes it (the RL seed pool's
form). A task is skipped (with a reason) when it has one hop, a chain item
the proposal grammar cannot hold, or a later page the search does not
return in its results; a demonstration whose trajectory fails the
self-play filters (`filters.check`) is counted, not kept, so every kept
demonstration passes them as the run would judge it.
"""

import dataclasses
import json
import re
from typing import Callable, Sequence

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.llm import scripted
from search_agent.rewards import searchmaster as sm
from search_agent.selfplay import filters as filters_lib
from search_agent.selfplay import proposal as proposal_lib
from search_agent.selfplay import verifier as verifier_lib

_REF = re.compile(r'\[(r\d+)\] ([^\n]+)')
_BAD = re.compile(r'[<>"\n]')


class DemonstrationError(ValueError):
  """A task cannot be rendered as a Proposer demonstration (says why).

  Attributes:
    reason: A short key for counting ('hops', 'claims', 'grammar',
      'not_found', 'steps', 'failed').
  """

  def __init__(self, reason: str, message: str):
    super().__init__(message)
    self.reason = reason


@dataclasses.dataclass(frozen=True, kw_only=True)
class DemoSetup:
  """What the Proposer role is prompted with in the run.

  Attributes:
    proposer_system: The Proposer's system prompt (proposal.proposer_system).
    agent_cfg: The Proposer's agent config (steps, budgets, window).
    seed_chars: Seed characters shown (SelfPlayConfig.seed_chars).
    filters: The filters every kept demonstration must pass.
    rewards: Reward constants (which tools count as search and open).
  """

  proposer_system: str
  agent_cfg: react.AgentConfig
  seed_chars: int
  filters: filters_lib.FilterConfig = filters_lib.FilterConfig()
  rewards: sm.SearchMasterRewards = sm.SearchMasterRewards()


def _fact(claim: task_lib.Claim) -> str:
  return f'{claim.subject} {claim.relation.replace("_", " ")} {claim.object}'


def proposal_reply(task: task_lib.Task) -> str:
  """The Proposer's final reply for `task` (proposer_ecg.md's form).

  Raises:
    DemonstrationError: fewer than two hops, claims not aligned with the
      evidence path, or a title or fact the grammar cannot hold.
  """
  path, claims = tuple(task.evidence), tuple(task.claims)
  if len(path) < 2:
    raise DemonstrationError(
        'hops', f'{task.id}: {len(path)} hop(s), want >= 2'
    )
  if len(claims) != len(path):
    raise DemonstrationError(
        'claims',
        f'{task.id}: {len(claims)} claims for {len(path)} evidence pages',
    )
  lines = []
  for doc, claim in zip(path, claims):
    fact = _fact(claim)
    if _BAD.search(doc) or _BAD.search(fact):
      raise DemonstrationError(
          'grammar', f'{task.id}: chain item {doc!r}: {fact!r}'
      )
    lines.append(f'<evidence doc="{doc}">{fact}</evidence>')
  text = (
      '<chain>\n' + '\n'.join(lines) + '\n</chain>\n'
      f'<question>{task.question}</question>\n'
      f'<answer>{task.answer}</answer>'
  )
  proposal_lib.parse_proposal(text)  # the run's own parser accepts it
  return text


def _call(name: str, **args) -> str:
  body = json.dumps({'name': name, 'arguments': args}, ensure_ascii=False)
  return f'<tool_call>\n{body}\n</tool_call>'


def _ref(messages, title: str) -> str | None:
  tools = [m['content'] for m in messages if m['role'] == 'tool']
  for ref, shown in _REF.findall(tools[-1] if tools else ''):
    if shown.strip() == title:
      return ref
  return None


def script(task: task_lib.Task) -> Callable[[Sequence[dict]], str]:
  """The Proposer's replies for `task`, a function of the conversation.

  Raises (when called):
    DemonstrationError: a later page of the path is not among the results
      of the search for its title.
  """
  path, final = tuple(task.evidence), proposal_reply(task)
  steps = [lambda _: _call('search', query=[path[0]])]
  for page in path[1:]:
    steps.append(lambda _, p=page: _call('search', query=[p]))

    def open_page(messages, p=page):
      ref = _ref(messages, p)
      if ref is None:
        raise DemonstrationError(
            'not_found', f'{task.id}: no result titled {p!r}'
        )
      return _call('open', ref_id=ref)

    steps.append(open_page)
  steps.append(lambda _: final)

  def respond(messages):
    k = sum(m['role'] == 'assistant' for m in messages)
    return steps[min(k, len(steps) - 1)](messages)

  return respond


def calls_needed(task: task_lib.Task) -> int:
  """Assistant turns of the demonstration (tool calls + the reply)."""
  return 2 * len(task.evidence)


async def demonstrate(
    task: task_lib.Task,
    seed: task_lib.Task,
    toolbox: react.Toolbox,
    setup: DemoSetup,
) -> tuple[traj_lib.Trajectory, filters_lib.FilterOutcome]:
  """Plays `task`'s demonstration on `seed` (its first page's seed task).

  Returns the trajectory (meta: role 'proposer', the task id) and the
  filters' verdict on it (the programmatic Verifier).

  Raises:
    DemonstrationError: the task cannot be demonstrated (see `script`), or
      the agent's step budget is below the demonstration's turns.
  """
  need = calls_needed(task)
  if setup.agent_cfg.budgets.max_steps < need:
    raise DemonstrationError(
        'steps',
        f'{task.id}: {need} turns, the Proposer has'
        f' {setup.agent_cfg.budgets.max_steps} steps',
    )
  llm = scripted.ScriptedLLM(script(task), name='proposer-demonstration')
  user = proposal_lib.seed_turn(seed, setup.seed_chars)
  traj = await react.ReActAgent(llm, setup.agent_cfg).run(
      traj_id=f'demo:{task.id}',
      task_id=seed.id,
      question=user,
      system_prompt=setup.proposer_system,
      toolbox=toolbox,
      meta={'role': 'proposer', 'source_task': task.id},
  )
  if traj.status == 'failed':
    raise DemonstrationError(
        'failed', f'{task.id}: rollout failed: {traj.error}'
    )
  outcome = await filters_lib.check(
      traj, verifier_lib.ProgrammaticVerifier(), setup.filters, setup.rewards
  )
  return traj, outcome


def with_system(traj: traj_lib.Trajectory, system: str) -> traj_lib.Trajectory:
  """`traj` with its system turn replaced (a Solver demonstration under the
  self-play run's Solver prompt)."""
  msgs = list(traj.messages)
  if not msgs or msgs[0].role != 'system':
    raise DemonstrationError('system', f'{traj.id}: no system turn first')
  msgs[0] = dataclasses.replace(msgs[0], content=system)
  return dataclasses.replace(
      traj, messages=tuple(msgs), meta={**traj.meta, 'role': 'solver'}
  )
