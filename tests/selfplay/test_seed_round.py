"""One seed through propose -> filters -> solve -> rewards (real harness,
real tools over the bundled 2Wiki index, scripted policy for the wiring)."""

import asyncio
import pathlib
import sys

import pytest

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.llm import scripted
from search_agent.selfplay import proposal
from search_agent.selfplay import seed_round
from search_agent.selfplay import stats
from search_agent.selfplay import verifier as verifier_lib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import scripts  # pylint: disable=g-import-not-at-top,wrong-import-position

SEED = task_lib.Task(
    id='seed:teutberga',
    question=(
        'Teutberga( died 11 November 875) was a queen of Lotharingia by'
        ' marriage to Lothair II.'
    ),
    answer='',
    meta={'title': 'Teutberga'},
)
MALFORMED = '<question>Who?</question><answer>x</answer>'  # no chain


def _runner(toolbox_factory, proposers, solver_answers):
  """RunRollout: proposer j replies by proposers[j], solver i answers [i]."""

  async def run(role, traj_id, system, user):
    if role == 'proposer':
      j = int(traj_id.rsplit('/p', 1)[1])
      respond = proposers[j]
    else:
      i = int(traj_id.rsplit('/s', 1)[1])
      respond = scripts.solver([solver_answers[i]])
    agent = react.ReActAgent(scripted.ScriptedLLM(respond), react.AgentConfig())
    traj = await agent.run(
        traj_id=traj_id,
        task_id='t',
        question=user,
        system_prompt=system,
        toolbox=toolbox_factory(),
    )
    return traj, True

  return run


def _play(run, **kw):
  cfg = seed_round.SelfPlayConfig(k_proposer=3, k_solver=2, **kw)
  return asyncio.run(
      seed_round.play_seed(
          SEED,
          run,
          verifier_lib.ProgrammaticVerifier(),
          cfg,
          proposer_system=proposal.proposer_system(cfg.ecg, '[]'),
          solver_system='solve',
      )
  )


def test_filters_solver_rewards_and_gate(toolbox_factory):
  run = _runner(
      toolbox_factory,
      [
          scripts.proposer(),
          scripts.proposer(searches=1),
          scripts.proposer(final=MALFORMED),
      ],
      ['Lothair I', 'Charlemagne'],
  )
  out = _play(run)
  assert [o.failed for o in out.filters] == [None, 'tool_use', 'format']
  assert out.chosen == 0 and out.retained
  z = [p.correct for p in out.solver_group]
  assert z == [1, 0]
  # SDR: C = 1 of 2, h_min = 1 unique query -> r0 + 0.8 * 1/10.
  assert out.proposer[0].base == pytest.approx(0.2 + 0.8 * 0.1)
  # 2 searches, 2 opens: ratio 1 < alpha, no penalty.
  assert out.proposer[0].reward == out.proposer[0].base
  assert [p.base for p in out.proposer[1:]] == [0.0, 0.0]
  assert out.h_min == 1
  assert [p.reward for p in out.solver_group] == [1.0, 0.0]
  (task,) = out.tasks
  assert task.answer == 'Lothair I' and task.evidence == (
      'Teutberga',
      'Lothair II',
  )
  assert task.meta['solver_correct'] == 1 and task.meta['chosen']
  assert task_lib.Task.from_json(task.to_json()) == task
  m = stats.iteration_metrics([stats.seed_summary(out)])
  assert m['seeds_retained'] == 1.0
  assert m['filter_pass'] == {
      'tool_use': 2 / 3,
      'format': 0.5,
      'validity': 1.0,
      'parametric': 1.0,
  }
  assert m['h_min_mean'] == 1.0
  assert m['open_search_ratio'] == {'proposer': 1.0, 'solver': 0.0}
  assert m['proposer_reward_mean'] == pytest.approx(0.28 / 3)
  assert m['solver_reward_mean'] == 0.5


def test_all_correct_is_r0_and_the_seed_is_discarded(toolbox_factory):
  run = _runner(toolbox_factory, [scripts.proposer()] * 3,
                ['Lothair I', 'Lothair I'])  # fmt: skip
  out = _play(run)
  assert [p.base for p in out.proposer] == [0.2] * 3  # C = K_S
  assert not out.retained  # best reward 0.2 <= r0
  assert stats.seed_summary(out)['h_min'] is None
  assert _play(run, seed_gate=False).retained


def test_naive_ablation_switches(toolbox_factory):
  # An over-opening proposer: 2 searches, 6 opens (ratio 3 > beta).
  def opener(messages):
    k = sum(m['role'] == 'assistant' for m in messages)
    if k in (0, 4):
      return scripts.call('search', query=[f'Lothair II {k}'])
    if k < 8:
      return scripts.call(
          'open',
          ref_id=scripts.refs(messages)[0][0]
          if scripts.refs(messages)
          else 'r1',
      )
    return scripts.GOOD

  run = _runner(toolbox_factory, [opener] * 3, ['Lothair I', 'Charlemagne'])
  full = _play(run)
  assert full.proposer[0].n_open > 2.5 * full.proposer[0].n_search
  assert full.proposer[0].reward == pytest.approx(full.proposer[0].base - 0.5)
  naive = _play(run, ecg=False, difficulty='success_rate', oop=False)
  assert naive.proposer[0].base == pytest.approx(0.2 + 0.8 * 1.0)  # C = K/2
  assert naive.proposer[0].reward == naive.proposer[0].base
  with pytest.raises(ValueError, match='difficulty'):
    seed_round.SelfPlayConfig(difficulty='accuracy')
  assert 'EVIDENCE CHAIN' in proposal.proposer_system(True, '')
  assert 'EVIDENCE CHAIN' not in proposal.proposer_system(False, '')
