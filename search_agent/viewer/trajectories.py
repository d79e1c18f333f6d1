"""One trajectory as the viewer shows it: steps, context events, tokens, mask.

Works on the JSON object of a trajectory line (search_agent format v1), not
on the `Trajectory` class, so a record from an older or newer writer still
shows what it has. Every assistant turn says whether it trains and why (the
loss mask rules of `agent/trajectory.py` and `filtering/turn_mask.py`);
every tool turn carries its parsed observation and, under a sliding window
or discard-all policy, when it left the model's context.
"""

import collections
import statistics
from typing import Any

from search_agent.viewer import observations

Json = dict[str, Any]


def messages(traj: Json) -> list[Json]:
  """The messages, each a dict (a stray value becomes an 'unknown' one)."""
  out = []
  for m in traj.get('messages') or ():
    if not isinstance(m, dict):
      m = {'role': 'unknown', 'content': str(m)}
    out.append(m)
  return out


def loss_reason(m: Json, removed: str = '') -> tuple[bool, str]:
  """(trains, why) for one message."""
  role = m.get('role', '')
  if role != 'assistant':
    what = {'tool': 'observation', 'system': 'system prompt'}.get(
        role, 'prompt'
    )
    return False, f'{what}: context only, never carries loss'
  if m.get('invalid'):
    return False, 'invalid tool call: kept as context, no loss (failed turn)'
  if not m.get('loss', True):
    return False, 'masked by the turn-level judge (loss=False)'
  if removed:
    return False, f'eligible, but the trajectory was dropped: {removed}'
  return True, 'trains: model output, loss mask 1'


def _token_stats(traj: Json) -> tuple[Json | None, dict[int, Json]]:
  """Whole-record token stats and per-message generation stats."""
  per_msg: dict[int, Json] = {}
  for g in traj.get('meta', {}).get('generations', ()) or ():
    lp = g.get('logprobs') or []
    per_msg[int(g.get('message', -1))] = {
        'n': len(g.get('token_ids', ())),
        'version': g.get('version'),
        'mean_logprob': statistics.fmean(lp) if lp else None,
    }
  tokens = traj.get('tokens')
  if not tokens:
    return None, per_msg
  per_msg = _per_turn(traj) or per_msg
  mask = tokens.get('loss_mask', ())
  versions = tokens.get('versions', ())
  lps = [lp for lp, m in zip(tokens.get('logprobs', ()), mask) if m]
  gen = collections.Counter(v for v in versions if v != -1)
  return {
      'n': len(tokens.get('token_ids', ())),
      'trained': sum(1 for x in mask if x),
      'versions': {str(k): v for k, v in sorted(gen.items())},
      'mean_logprob': statistics.fmean(lps) if lps else None,
      'routed_experts': tokens.get('routed_experts') is not None,
      'mask_runs': _runs(mask),
  }, per_msg


def _segments(tokens: Json) -> list[Json]:
  """Generated spans (maximal runs of version != -1), one per model call."""
  out: list[Json] = []
  prev = -1
  cols = zip(tokens.get('versions', ()), tokens.get('loss_mask', ()),
             tokens.get('logprobs', ()))  # fmt: skip
  for v, m, lp in cols:
    if v != -1:
      if prev == -1:
        out.append({'n': 0, 'trained': 0, 'versions': set(), 'lp': []})
      seg = out[-1]
      seg['n'] += 1
      seg['trained'] += bool(m)
      seg['versions'].add(v)
      seg['lp'].append(lp)
    prev = v
  return [
      {
          'n': g['n'],
          'trained': g['trained'],
          'version': '/'.join(str(v) for v in sorted(g['versions'])),
          'mean_logprob': statistics.fmean(g['lp']),
      }
      for g in out
  ]


def _per_turn(traj: Json) -> dict[int, Json]:
  """Token stats per assistant message, from the token-exact record.

  The k-th generated span is the k-th assistant turn (each call's output is
  contiguous, bounded by prompt tokens); when the counts differ (a record
  from another writer) no turn is given numbers.
  """
  segs = _segments(traj.get('tokens') or {})
  turns = [
      i for i, m in enumerate(messages(traj)) if m.get('role') == 'assistant'
  ]
  return dict(zip(turns, segs)) if len(segs) == len(turns) else {}


def _runs(mask) -> list[list[int]]:
  """Run-length encoding of the loss mask: [[value, length], ...]."""
  out: list[list[int]] = []
  for x in mask:
    x = 1 if x else 0
    if out and out[-1][0] == x:
      out[-1][1] += 1
    else:
      out.append([x, 1])
  return out


def _left_context(traj: Json) -> dict[int, str]:
  """Message index -> when that turn left the model's view."""
  meta = traj.get('meta', {}).get('context', {}) or {}
  msgs = messages(traj)
  out: dict[int, str] = {}
  if meta.get('policy') == 'sliding_window':
    keep = int(meta.get('keep_observations', 5))
    tools = [i for i, m in enumerate(msgs) if m.get('role') == 'tool']
    for k, i in enumerate(tools):
      if k + keep < len(tools):
        out[i] = (
            f'omitted from the context after message {tools[k + keep]}'
            f' (sliding window keeps the last {keep})'
        )
  for ev in meta.get('events', ()) or ():
    at = int(ev.get('at_message', 0))
    for i in range(2, at):
      out.setdefault(
          i,
          f'dropped by the {ev.get("policy", "")} reset before step {ev.get("step")}',
      )
  return out


def detail(traj: Json, extra: Json | None = None, removed: str = '') -> Json:
  """The view of one trajectory (JSON-ready).

  Args:
    traj: The trajectory's JSON object.
    extra: Joined records: 'grade' (eval result), 'reward', 'filter',
      'task' (claims, evidence), whatever the run holds.
    removed: Why a filter dropped the whole trajectory ('' if it did not).
  """
  tokens, per_msg = _token_stats(traj)
  left = _left_context(traj)
  steps = []
  for i, m in enumerate(messages(traj)):
    trains, why = loss_reason(m, removed)
    step: Json = {
        'i': i,
        'role': m.get('role', ''),
        'name': m.get('name', ''),
        'content': str(m.get('content') or ''),
        'reasoning': str(m.get('reasoning') or ''),
        'tool_calls': [
            {'name': c.get('name', ''), 'arguments': c.get('arguments', {})}
            for c in m.get('tool_calls') or ()
            if isinstance(c, dict)
        ],
        'invalid': bool(m.get('invalid', False)),
        'trains': trains,
        'why': why,
    }
    if step['role'] == 'tool':
      step['blocks'] = observations.parse(step['content'])
      if any(b['kind'] != 'text' for b in step['blocks']):  # stored once
        step['chars'] = len(step['content'])
        step['content'] = step['content'].split('\n', 1)[0]
    if i in left:
      step['left_context'] = left[i]
    if i in per_msg:
      step['tokens'] = per_msg[i]
    steps.append(step)
  meta = traj.get('meta', {}) or {}
  ctx = meta.get('context', {}) or {}
  return {
      'id': traj.get('id', ''),
      'task_id': traj.get('task_id', ''),
      'question': traj.get('question', ''),
      'status': traj.get('status', ''),
      'final_answer': traj.get('final_answer'),
      'budgets_hit': list(traj.get('budgets_hit', ())),
      'error': traj.get('error'),
      'timings': traj.get('timings', {}),
      'policy_model': meta.get('policy_model', ''),
      'usage': meta.get('usage', {}),
      'context_policy': ctx.get('policy', ''),
      'context_events': list(ctx.get('events', ()) or ()),
      'tokens': tokens,
      'tokens_note': meta.get('tokens_note') or meta.get('tokens_dropped', ''),
      'mas': _mas(meta.get('mas'), removed),
      'steps': steps,
      **(extra or {}),
  }


def _mas(mas: Any, removed: str) -> Json | None:
  """The MAS searchers' own trajectories and what the verifier was shown."""
  if not isinstance(mas, dict):
    return None
  searchers = [s for s in mas.get('searchers') or () if isinstance(s, dict)]
  return {
      'fallback': mas.get('fallback'),
      'verifier_status': mas.get('verifier_status'),
      'searcher_answers': mas.get('searcher_answers'),
      'searchers': [
          detail(s, {'type': 'trajectory'}, removed) for s in searchers
      ],
  }


def seen_titles(view: Json) -> frozenset[str]:
  """Titles of the pages a trajectory view's observations showed."""
  return frozenset(
      h.get('title', '')
      for s in view['steps']
      for b in s.get('blocks', ())
      for h in b.get('hits', ())
  )


def tool_counts(traj: Json) -> collections.Counter:
  return collections.Counter(
      c.get('name', '')
      for m in messages(traj)
      for c in m.get('tool_calls') or ()
      if isinstance(c, dict)
  )
