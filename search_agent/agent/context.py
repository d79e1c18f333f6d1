"""Context-management policies as pure functions over messages.

The same functions prepare SFT data and build rollout prompts
(open-recipe.md, "SFT Recipe and Results": "The same context-management policy
is used during SFT preparation and rollout"). Policies, by name (the name is
recorded in every result):

  * 'none': the full history.
  * 'sliding_window' (open-recipe.md): the last `keep_last_n_observations` tool
    observations in full; every older one replaced by a one-line omission
    marker, `[observation omitted: {tool name}, {n} chars]`. System prompt,
    question, reasoning and tool calls stay intact. Applied before every call.
  * 'discard_all' (iris.md's default, DeepSeek-V3.2's strategy): when the
    prompt reaches the trigger (the harness decides: a fraction of the context
    limit), all tool history is dropped. The new context is exactly: the
    leading system turn(s), the question (the first user turn), and one user
    turn holding the reset note:
      `[context reset after step {s}: earlier turns were removed; {r} steps
      remain]` / `Your running notes so far:` / the notes,
    where the notes (`running_notes`) are every tool call made so far as
    `called {name} {arguments as sorted JSON}` and the visible assistant text
    outside tool calls as `note: {text}`, one per line, in order, cut to the
    last `max_chars` characters.
  * 'summary': as discard-all, but the note carries an LLM summary of the
    history (`Summary of your research so far:`); the harness makes the LLM
    call, `apply_summary` only rewrites the messages.

The training segments of a trajectory under a policy (for every assistant
turn exactly the context the policy showed it; SFT and RL alike) are
`token_record.rendered_segments` / `TokenAssembler`.
"""

import dataclasses
import json
import re
from typing import Callable, Sequence

from search_agent.agent import trajectory

POLICIES = ('none', 'sliding_window', 'discard_all', 'summary')
Turns = Sequence[trajectory.Turn]
_CALL_RE = re.compile(r'<tool_call>.*?</tool_call>', re.DOTALL)


class ContextPolicyError(ValueError):
  """A policy was asked for something it cannot do (bad name, no question)."""


def omission_marker(turn: trajectory.Turn) -> str:
  """The text that replaces an omitted tool observation."""
  return (
      f'[observation omitted: {turn.name or "tool"}, {len(turn.content)} chars]'
  )


def sliding_window(
    messages: Turns, keep_last_n_observations: int
) -> tuple[trajectory.Turn, ...]:
  """Keeps the last n tool observations; older ones become omission markers.

  Args:
    messages: The conversation.
    keep_last_n_observations: How many of the latest tool turns stay in full.

  Returns:
    The rewritten conversation (same length, same order).
  """
  if keep_last_n_observations < 0:
    raise ContextPolicyError(
        f'keep_last_n_observations must be >= 0, got {keep_last_n_observations}'
    )
  tool_at = [i for i, m in enumerate(messages) if m.role == 'tool']
  n_old = max(0, len(tool_at) - keep_last_n_observations)
  old = set(tool_at[:n_old])
  return tuple(
      dataclasses.replace(m, content=omission_marker(m)) if i in old else m
      for i, m in enumerate(messages)
  )


def question_end(messages: Turns) -> int:
  """Index one past the question: the leading system turns + first user turn."""
  for i, m in enumerate(messages):
    if m.role == 'user':
      return i + 1
    if m.role != 'system':
      break
  raise ContextPolicyError(
      'no question: the conversation must start with system turn(s) followed'
      ' by a user turn'
  )


def running_notes(messages: Turns, max_chars: int = 8_000) -> str:
  """The agent's running notes: its tool calls and visible text, in order.

  Args:
    messages: The conversation (turns other than assistant are ignored).
    max_chars: Keep only the last `max_chars` characters.

  Returns:
    One line per tool call (`called {name} {sorted JSON args}`) and per
    non-empty visible text outside tool calls (`note: {text}`).
  """
  lines = []
  for m in messages:
    if m.role != 'assistant':
      continue
    text = _CALL_RE.sub('', m.content).strip()
    if text:
      lines.append(f'note: {text}')
    for call in m.tool_calls:
      args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
      lines.append(f'called {call.name} {args}')
  notes = '\n'.join(lines)
  return notes[-max_chars:] if len(notes) > max_chars else notes


def reset_header(step: int, steps_left: int) -> str:
  """First line of the note that replaces a discarded history."""
  return (
      f'[context reset after step {step}: earlier turns were removed;'
      f' {steps_left} steps remain]'
  )


def _reset(messages: Turns, note: str) -> tuple[trajectory.Turn, ...]:
  head = tuple(messages[: question_end(messages)])
  return head + (trajectory.Turn(role='user', content=note),)


def discard_all(
    messages: Turns, *, step: int, steps_left: int, max_chars: int = 8_000
) -> tuple[trajectory.Turn, ...]:
  """Drops all history after the question; carries the running notes.

  Args:
    messages: The current context.
    step: Agent steps taken so far.
    steps_left: Agent steps remaining in the budget.
    max_chars: Cap on the carried notes (their tail is kept).

  Returns:
    system turn(s), the question, and one user turn with the reset note.
  """
  notes = running_notes(messages[question_end(messages) :], max_chars)
  note = (
      f'{reset_header(step, steps_left)}\nYour running notes so far:\n{notes}'
  )
  return _reset(messages, note)


def apply_summary(
    messages: Turns, summary: str, *, step: int, steps_left: int
) -> tuple[trajectory.Turn, ...]:
  """Replaces the history after the question with an LLM summary of it."""
  if not summary.strip():
    raise ContextPolicyError(
        'empty summary: the summary policy needs a non-empty summary (a failed'
        ' summary is an error, not a reason to keep the full context)'
    )
  note = (
      f'{reset_header(step, steps_left)}\nSummary of your research so far:\n'
      f'{summary.strip()}'
  )
  return _reset(messages, note)


def policy_view(
    name: str, keep_last_n_observations: int = 5
) -> Callable[[Turns], tuple[trajectory.Turn, ...]]:
  """The per-call view function of a stateless policy ('none', sliding)."""
  if name == 'sliding_window':
    return lambda m: sliding_window(m, keep_last_n_observations)
  if name == 'none':
    return tuple
  raise ContextPolicyError(
      f'policy {name!r} has no per-call view; choose none or sliding_window'
      ' (discard_all and summary rewrite the history when triggered)'
  )
