"""SFT-RL climbing hand-off: used rollouts -> one SFT trajectory per query."""

import json

from search_agent.agent import trajectory as traj_lib
from search_agent.filtering import climb_selection
from search_agent.train.rl import replay_queue
from search_agent.train.rl import used_rollouts


def _rollout(tid, gid, i, correct, calls):
  msgs = [traj_lib.Turn(role='user', content='q')]
  for k in range(calls):
    msgs.append(
        traj_lib.Turn(
            role='assistant', content=f'step {k}',
            tool_calls=(traj_lib.ToolCall(name='search', arguments={}),),
        )
    )  # fmt: skip
    msgs.append(traj_lib.Turn(role='tool', name='search', content='r'))
  msgs.append(traj_lib.Turn(role='assistant', content='<answer>a</answer>'))
  return traj_lib.Trajectory(
      id=f'{gid}#{i}', task_id=tid, question='q', messages=tuple(msgs),
      final_answer='a', status='answered',
      meta={'group_id': gid, 'reward': {'correct': correct}},
  )  # fmt: skip


def test_handoff_keeps_the_shortest_deep_success_of_used_groups(tmp_path):
  q = replay_queue.ReplayQueue(tmp_path / 'queue')
  q.commit(0, ['a@0', 'b@0'])
  rollouts = [
      _rollout('a', 'a@0', 0, 1.0, 3),
      _rollout('a', 'a@0', 1, 1.0, 2),  # shortest success with 2 tool turns
      _rollout('a', 'a@0', 2, 0.0, 1),
      _rollout('b', 'b@0', 0, 1.0, 2),  # b: all correct, outside the band
      _rollout('b', 'b@0', 1, 1.0, 2),
      _rollout('c', 'c@0', 0, 1.0, 2),  # c: never used by an update
      _rollout('c', 'c@0', 1, 0.0, 2),
  ]
  for t in rollouts:
    traj_lib.append_jsonl(tmp_path / 'rollouts-w0.jsonl', t)
  report = used_rollouts.handoff(str(tmp_path), climb_selection.ClimbConfig())
  assert (report['rollouts'], report['selected']) == (5, 1)
  out = tmp_path / 'climbing' / 'sft_train.jsonl'
  (kept,) = list(traj_lib.iter_jsonl(out))
  assert kept.id == 'a@0#1'
  assert json.loads((tmp_path / 'climbing' / 'report.json').read_text())
