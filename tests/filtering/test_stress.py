"""End to end: the 200 real trajectories plus deliberately damaged copies.

Every injected defect must be caught by the stage meant for it, and every
line must be accounted for (kept, removed with a reason, or a line error).
"""

import asyncio
import collections
import dataclasses
import json

from search_agent.agent import chatml
from search_agent.agent import trajectory as T
from search_agent.filtering import calibrate
from search_agent.filtering import job as job_lib
from search_agent.filtering import judges
from search_agent.filtering import pipeline
from search_agent.filtering import selection


def damaged(real_lines, trajs):
  """Lines to append to the real file, each with one known defect.

  Each defect goes to a different task whose answer the judge accepts, so
  the stage meant for it is the one that sees it.
  """
  index = {t.id: i for i, t in enumerate(trajs)}
  per_task = collections.Counter(t.task_id for t in trajs)
  ok = [  # Tasks with one rollout, answered correctly.
      t
      for t in trajs
      if per_task[t.task_id] == 1
      and judges.contains_match(t.final_answer, t.meta['answer'])
  ]
  rows = []
  for t in ok[:10]:  # Loops inside real reasoning.
    rows.append(json.dumps(calibrate.loop_variant(t, 120, 4096, 0).to_json()))
  for period in (30, 500):  # Rollouts 3 and 4 of the first task.
    rows.append(
        json.dumps(calibrate.loop_variant(ok[0], period, 4096, 0).to_json())
    )
  rows += [real_lines[index[t.id]] for t in ok[10:13]]  # Exact duplicates.
  rows += ['{"messages": [', '{"type": "chatml"}', '[1, 2]']  # Malformed.
  # A failed call, then recovery: a trajectory with two tool-call turns.
  multi = next(t for t in ok[16:] if selection.tool_call_turns(t) >= 2)
  obj = json.loads(real_lines[index[multi.id]])
  browse = json.dumps({'name': 'browse', 'arguments': {'url': 'x'}})
  obj['messages'][2]['content'] = f'<tool_call>{browse}</tool_call>'
  rows.append(json.dumps(obj))  # Unknown tool: turn kept as context.
  t = ok[14]
  turns = list(t.messages)
  turns[2] = dataclasses.replace(turns[2], tool_calls=turns[2].tool_calls * 3)
  repeat = dataclasses.replace(t, id='repeat', messages=tuple(turns))
  rows.append(json.dumps(repeat.to_json()))  # Same call 3x in a row.
  t = ok[15]
  turns = list(t.messages)
  turns[2] = dataclasses.replace(
      turns[2], content='<think>' + turns[2].reasoning, reasoning=''
  )
  cut = dataclasses.replace(t, id='cut', messages=tuple(turns))
  rows.append(json.dumps(cut.to_json()))  # Unterminated <think>.
  return rows


def test_every_defect_is_caught(webdancer_path, webdancer, tmp_path):
  real_lines = open(webdancer_path, encoding='utf-8').read().splitlines()
  path = tmp_path / 'stress.jsonl'
  rows = real_lines + damaged(real_lines, webdancer)
  path.write_text('\n'.join(rows) + '\n', encoding='utf-8')
  job = job_lib.FilterJob(
      input_path=str(path),
      known_tools=('search', 'visit'),
      judge='contains',
      pipeline=pipeline.PipelineConfig(rollouts_per_task=3),
  )
  rep = asyncio.run(job_lib.run_filter(job, tmp_path / 'out'))
  inp = rep['input']
  assert inp['lines'] == 221
  assert [e['line_no'] for e in inp['line_errors']] == [216, 217, 218]
  assert inp['parse_errors'] == {'unknown_tool': 1}
  assert inp['unknown_tool_calls'] == {'browse': 1}
  stages = {s['name']: s for s in rep['stages']}
  assert stages['rollout_cap']['reasons'] == {'over_rollout_cap': 1}
  # Real data: 62 incorrect under the 'contains' judge (test_correctness).
  assert stages['correctness']['reasons'] == {'incorrect': 62}
  assert stages['degeneration']['reasons'] == {
      'compression_ratio': 11,
      'identical_tool_calls': 1,
      'unterminated_block': 1,
  }
  assert stages['dedup']['reasons'] == {'duplicate': 3}
  assert stages['failed_turns']['stats']['trajectories_with_failed_turns'] == 1
  decisions = [
      json.loads(l) for l in open(tmp_path / 'out' / 'decisions.jsonl')
  ]
  assert len(decisions) + len(inp['line_errors']) == inp['lines']
  kept = list(T.iter_jsonl(tmp_path / 'out' / 'filtered.jsonl'))
  assert len(kept) == 139
  browse = [t for t in kept if any(m.invalid for m in t.messages)]
  assert len(browse) == 1 and not browse[0].messages[2].loss
