"""Proposer demonstrations from a synthesized two-hop task, played through
the real harness over the real index of the bundled 2Wiki corpus."""

import asyncio
import dataclasses

import pytest

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.agent import trajectory as traj_lib
from search_agent.corpus import sources
from search_agent.selfplay import demonstrations as demos
from search_agent.selfplay import proposal
from search_agent.selfplay import seeds as seeds_lib

# A task of the tiny synthesis (tasks.train.jsonl of `pipeline.py:tiny`).
TASK = task_lib.Task(
    id='syn-56336d587c83',
    question='When was the director of the film Getting In born?',
    answer='July 24, 1965',
    evidence=('Getting In', 'Doug Liman'),
    claims=(
        task_lib.Claim(
            subject='Getting In', relation='director', object='Doug Liman'
        ),
        task_lib.Claim(
            subject='Doug Liman',
            relation='date of birth',
            object='July 24, 1965',
        ),
    ),
)
TOOLS_TEXT = 'search(query: list[str])\nopen(ref_id: str)'


@pytest.fixture(scope='module')
def seeds():
  return seeds_lib.seeds_by_title(sources.CorpusSpec(derive_links=False))


def _setup(max_steps=4):
  return demos.DemoSetup(
      proposer_system=proposal.proposer_system(True, TOOLS_TEXT),
      agent_cfg=react.AgentConfig(
          budgets=dataclasses.replace(
              react.AgentConfig().budgets, max_steps=max_steps
          )
      ),
      seed_chars=300,
  )


def test_reply_is_a_proposal_of_the_task():
  prop = proposal.parse_proposal(demos.proposal_reply(TASK))
  assert [e.doc for e in prop.chain] == ['Getting In', 'Doug Liman']
  assert prop.chain[1].fact == 'Doug Liman date of birth July 24, 1965'
  assert (prop.question, prop.answer) == (TASK.question, TASK.answer)


@pytest.mark.parametrize(
    'task, reason',
    [
        (dataclasses.replace(TASK, evidence=('Getting In',)), 'hops'),
        (dataclasses.replace(TASK, claims=TASK.claims[:1]), 'claims'),
        (
            dataclasses.replace(TASK, evidence=('Getting "In"', 'Doug Liman')),
            'grammar',
        ),
    ],
)
def test_tasks_the_grammar_cannot_hold_are_refused(task, reason):
  with pytest.raises(demos.DemonstrationError) as e:
    demos.proposal_reply(task)
  assert e.value.reason == reason


def test_demonstration_is_the_proposer_role_and_passes_the_filters(
    toolbox_factory, seeds
):
  seed = seeds['Getting In']
  setup = _setup()
  traj, outcome = asyncio.run(
      demos.demonstrate(TASK, seed, toolbox_factory(), setup)
  )
  assert outcome.failed is None, outcome.reason
  # Exactly what the Proposer is prompted with in the run.
  assert traj.messages[0].content == setup.proposer_system
  assert traj.messages[1].content == proposal.seed_message(
      'Getting In', seed.question, 300
  )
  assert [(c.name, c.arguments) for c in traj.tool_calls] == [
      ('search', {'query': ['Getting In']}),
      ('search', {'query': ['Doug Liman']}),
      ('open', {'ref_id': traj.tool_calls[2].arguments['ref_id']}),
  ]
  opened = [m.content for m in traj.messages if m.role == 'tool'][-1]
  assert 'Doug Liman' in opened and '1965' in opened
  assert proposal.final_text(traj) == demos.proposal_reply(TASK)
  assert traj.meta['role'] == 'proposer'
  assert traj.task_id == seed.id and seed.id.startswith('seed:')
  # Round trip through Trajectory JSONL (the SFT input).
  back = traj_lib.Trajectory.from_json(traj.to_json())
  assert back.messages == traj.messages


def test_too_few_steps_and_missing_pages_are_skipped(toolbox_factory, seeds):
  seed = seeds['Getting In']
  with pytest.raises(demos.DemonstrationError) as e:
    asyncio.run(
        demos.demonstrate(TASK, seed, toolbox_factory(), _setup(max_steps=3))
    )
  assert e.value.reason == 'steps'
  ghost = dataclasses.replace(
      TASK, evidence=('Getting In', 'No Such Page Anywhere')
  )
  with pytest.raises(demos.DemonstrationError) as e:
    asyncio.run(demos.demonstrate(ghost, seed, toolbox_factory(), _setup()))
  assert e.value.reason == 'not_found'


def test_solver_demonstration_takes_the_run_system_prompt():
  traj = traj_lib.Trajectory(
      id='t',
      task_id='x',
      question='q',
      messages=(
          traj_lib.Turn(role='system', content='old'),
          traj_lib.Turn(role='user', content='q'),
      ),
  )
  out = demos.with_system(traj, 'new')
  assert out.messages[0].content == 'new' and out.meta['role'] == 'solver'
  with pytest.raises(demos.DemonstrationError):
    demos.with_system(dataclasses.replace(traj, messages=traj.messages[1:]),
                      'new')  # fmt: skip
