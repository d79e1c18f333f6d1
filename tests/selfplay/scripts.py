"""Scripted Proposer/Solver replies for harness-wiring tests (not a model).

Each responder reads the conversation (role from the system prompt, step
from the assistant turns, ref ids from the last observation) and replies
with tool calls over the real index, then a final reply.
"""

import json
import re

REF = re.compile(r'\[(r\d+)\] ([^\n]+)')


def call(name, **args):
  return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def refs(messages):
  tools = [m['content'] for m in messages if m['role'] == 'tool']
  return REF.findall(tools[-1]) if tools else []


def ref_of(messages, title):
  for r, t in refs(messages):
    if t.strip() == title:
      return r
  return refs(messages)[0][0]


GOOD = (
    '<chain>\n'
    '<evidence doc="Teutberga">Teutberga married Lothair II</evidence>\n'
    '<evidence doc="Lothair II">Lothair II was the son of Emperor Lothair I'
    '</evidence>\n'
    '</chain>\n'
    '<question>Who was the father of the husband of the queen of Lotharingia'
    ' who died on 11 November 875?</question>\n'
    '<answer>Lothair I</answer>'
)


def proposer(final=GOOD, searches=2):
  """Searches `searches` times (opening the hit), then replies `final`."""
  queries = ['Teutberga queen of Lotharingia', 'Lothair II king of Lotharingia']
  titles = ['Teutberga', 'Lothair II']

  def respond(messages):
    k = sum(m['role'] == 'assistant' for m in messages)
    step, phase = divmod(k, 2)
    if step < searches:
      if phase == 0:
        return 'Looking.\n' + call('search', query=[queries[step]])
      return call('open', ref_id=ref_of(messages, titles[step]))
    return final

  return respond


def solver(answers):
  """Solver i (by the question's index in `answers` order) searches once."""
  counter = {'n': 0}

  def respond(messages):
    k = sum(m['role'] == 'assistant' for m in messages)
    if k == 0:
      return call('search', query=['Lothair II father'])
    i = counter['n']
    counter['n'] += 1
    return f'<answer>{answers[i % len(answers)]}</answer>'

  return respond
