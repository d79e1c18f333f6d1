"""The solver role: real agent rollouts in the local search environment.

A ReAct agent (agent/react.py) with the open recipe's search + visit tools
over the run's search engine attempts the question; the answer is judged
by exact match first, then the outcome judge (rewards/outcome.py). The
attempt records the search + visit call count and the last actions (the
generator's feedback); the trajectory is kept in the journal entry so an
accepted task carries its successful solver trajectory.
"""

import dataclasses
import json

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.rewards import outcome
from search_agent.search.tools import Toolbox
from search_agent.search.tools import ToolboxConfig
from search_agent.synthesis import roles

COUNTED_TOOLS = ('search', 'visit')


@dataclasses.dataclass(frozen=True, kw_only=True)
class SolverConfig:
  """Solver rollouts.

  Attributes:
    agent: Agent sampling, budgets and context policy.
    tools: Toolbox settings (open recipe: search + visit).
    system_prompt: Prompt file of the agent (llm/prompts).
    recent_actions: Tool calls quoted back to the generator.
  """

  agent: react.AgentConfig = react.AgentConfig()
  tools: ToolboxConfig = ToolboxConfig()
  system_prompt: str = 'agent_system.md'
  recent_actions: int = 5


def _action(call) -> str:
  args = json.dumps(call.arguments, ensure_ascii=False)
  return f'{call.name}({args[:160]})'


class AgentSolver:
  """Rollouts of any policy behind `llm/` on the synthesis engine."""

  def __init__(
      self,
      policy: protocol.LLM,
      engine,
      *,
      judge: protocol.LLM | None = None,
      summarizer: protocol.LLM | None = None,
      config: SolverConfig = SolverConfig(),
  ):
    self.name = f'agent:{policy.name}'
    self._agent = react.ReActAgent(policy, config.agent)
    self._engine = engine
    self._judge = judge
    self._summarizer = summarizer or policy
    self._config = config
    schemas = Toolbox(engine, config=config.tools).schemas()
    system = prompt_lib.load(config.system_prompt)
    self._system = system.render(tools=react.tool_text(schemas))

  async def solve(self, proposal) -> roles.Attempt:
    toolbox = Toolbox(
        self._engine, config=self._config.tools, summarizer=self._summarizer
    )
    traj = await self._agent.run(
        traj_id=f'{proposal.id}#solver',
        task_id=proposal.id,
        question=proposal.question,
        system_prompt=self._system,
        toolbox=toolbox,
        meta={'role': 'synthesis_solver'},
    )
    task = task_lib.Task(
        id=proposal.id,
        question=proposal.question,
        answer=proposal.answer,
        aliases=proposal.aliases,
    )
    correct = await outcome.judge_answer(self._judge, task, traj.final_answer)
    calls = [c for c in traj.tool_calls if c.name in COUNTED_TOOLS]
    return roles.Attempt(
        answer=traj.final_answer,
        correct=correct,
        calls=len(calls),
        recent_actions=tuple(
            _action(c) for c in calls[-self._config.recent_actions :]
        ),
        status=traj.status,
        trajectory=traj.to_json(),
    )
