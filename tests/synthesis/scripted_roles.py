"""Scripted replies for the LLM roles (harness wiring tests only).

Each responder reads the prompt it is given (the real prompt files) and
answers in the JSON shape the role parses, so the loop's wiring runs end
to end without a model. Nothing here measures a model.
"""

import json
import re

from search_agent.llm.scripted import ScriptedLLM


def _last(messages) -> str:
  return messages[-1]['content']


def extractor(messages) -> str:
  text = _last(messages)
  title = re.search(r'^Page title: (.*)$', text, re.M).group(1)
  linked = re.findall(r'^- ([^:\n]+(?::[^:\n]+)?): ', text, re.M)
  block = text.split('numbered:\n', 1)[1]
  passages = re.findall(r'^(\d+)\. (.*)$', block, re.M)
  claims = []
  for i, p in passages:
    for t in linked:
      name = re.sub(r'\s*\([^()]*\)\s*$', '', t)
      if name in p:
        claims.append({'subject': title, 'relation': 'linked to',
                       'object': name, 'passage': int(i)})  # fmt: skip
  return json.dumps({'claims': claims})


class Generator:
  """Template-like questions; 'Be precise.' once the critic asked; the
  start left unnamed once the controller found a shortcut."""

  def __init__(self):
    self.answers: dict[str, str] = {}

  def __call__(self, messages) -> str:
    text = _last(messages)
    answer = re.search(r'question\): (.*)$', text, re.M).group(1)
    subject, rel, _ = re.search(
        r'Path 1:\n  (.*?) \| (.*?) \| (.*?)  \(source', text
    ).groups()
    q = f'Which page does {subject} have as {rel} in its lead paragraph?'
    if 'returned:controller:shortcut' in text:
      q = f'Which page is {rel} in the lead of the page this path starts at?'
    if 'returned:critic' in text:
      q += ' Be precise.'
    self.answers[q] = answer
    return json.dumps({'question': q, 'paths_used': [1],
                       'starting_entities': [subject]})  # fmt: skip


def critic(messages) -> str:
  text = _last(messages)
  if text.startswith('A solver failed'):
    return json.dumps({'valid': True, 'confidence': 'high', 'reason': 'ok'})
  good = 'Be precise.' in text
  dims = ('wording', 'identifying_information', 'constraint_clarity',
          'difficulty', 'grounding')  # fmt: skip
  ratings = {d: 'excellent' for d in dims}
  if not good:
    ratings['constraint_clarity'] = 'good'
  return json.dumps({'ratings': ratings, 'score': 7,
                     'diagnosis': '' if good else 'say what is asked'})  # fmt: skip


class Policy:
  """Two searches, then the reference answer for even-length questions."""

  def __init__(self, generator: Generator):
    self.generator = generator

  def __call__(self, messages) -> str:
    question = messages[1]['content']
    turns = sum(m['role'] == 'assistant' for m in messages)
    if turns < 2:
      body = json.dumps({'name': 'search',
                         'arguments': {'query': [question[:60]]}})  # fmt: skip
      return f'<think>search</think>\n<tool_call>{body}</tool_call>'
    answer = self.generator.answers.get(question, '')
    if len(question) % 2:
      answer = 'Nobody'
    return f'<think>done</think>\n<answer>{answer}</answer>'


def judge(messages) -> str:
  text = _last(messages)
  if 'REQUIRED' in text:
    n = len(re.findall(r'^\d+\. ', text, re.M))
    return json.dumps({'required': list(range(1, min(n, 2) + 1))})
  if 'finalize the required claims' in text:
    s, r, o = re.search(r'^1\. (.*?) \| (.*?) \| (.*)$', text, re.M).groups()
    return json.dumps({'claims': [{'subject': s, 'relation': r, 'object': o}]})
  if 'semantic' in text or 'refer to the same thing' in text:
    return json.dumps({'match': False})
  return json.dumps({'correct': False})


def verifier(messages) -> str:
  text = _last(messages)
  if 'Split the question' in text:
    return json.dumps({'constraints': [{'text': 'c', 'supported': True}],
                       'alternative_queries': ['lead paragraph']})  # fmt: skip
  return json.dumps({'alternative_answer': None, 'reason': 'none'})


def recipe_llms() -> dict[str, ScriptedLLM]:
  gen = Generator()
  return {
      'extractor': ScriptedLLM(extractor, name='s-extractor'),
      'generator': ScriptedLLM(gen, name='s-generator'),
      'critic': ScriptedLLM(critic, name='s-critic'),
      'solver': ScriptedLLM(Policy(gen), name='s-policy'),
      'judge': ScriptedLLM(judge, name='s-judge'),
      'verifier': ScriptedLLM(verifier, name='s-verifier'),
  }


def refusing(llms) -> dict[str, ScriptedLLM]:
  """Same-named LLMs that fail on any call (a rerun must hit the cache)."""
  return {n: ScriptedLLM([], name=llm.name) for n, llm in llms.items()}


class Iris:
  """Scripted Iris roles: distiller/author/abstractor and reference."""

  def __init__(self):
    self.answers: dict[str, str] = {}

  def generator(self, messages) -> str:
    text = _last(messages)
    if text.startswith('Distill'):
      answer = re.search(r'^Target answer: (.*)$', text, re.M).group(1)
      titles = re.findall(r'^## (.*)$', text, re.M)
      a, b = titles[1], titles[2]
      return json.dumps({'entities': [], 'relations': [
          {'subject': a, 'relation': 'points to', 'object': answer, 'page': a},
          {'subject': b, 'relation': 'mentions', 'object': a, 'page': b},
      ]})  # fmt: skip
    if text.startswith('Write one multi-hop'):
      answer = re.search(r'^Target answer: (.*)$', text, re.M).group(1)
      block = text.split('object):\n', 1)[1]
      r1, r2 = re.findall(r'^(.*) \| (.*) \| (.*)$', block, re.M)[:2]
      q = f'What does {r1[0]} point to, given {r2[0]} mentions it?'
      if 'abstraction' in text:
        q += ' [v2]'
      self.answers[q] = answer
      path = [dict(zip(('subject', 'relation', 'object'), r)) for r in (r2, r1)]
      return json.dumps({'question': q, 'reasoning_path': path,
                         'entities': [r1[0], r2[0]]})  # fmt: skip
    q = re.search(r'^Question: (.*)$', text, re.M).group(1)
    out = q
    if '[v2]' in q:
      out = (
          'What does a work of one studio point to, given a later page'
          ' mentions it?'
      )
    self.answers[out] = self.answers.get(q, '')
    return json.dumps({'references': {}, 'question': out})

  def reference(self, messages) -> str:
    text = _last(messages)
    q = re.search(r'^Question: (.*)$', text, re.M).group(1)
    if text.startswith('Answer the question from memory'):
      return 'Answer: nobody'
    return f'Answer: {self.answers.get(q, "")}'


def iris_llms() -> dict[str, ScriptedLLM]:
  s = Iris()
  return {
      'generator': ScriptedLLM(s.generator, name='s-iris'),
      'reference': ScriptedLLM(s.reference, name='s-reference'),
      'judge': ScriptedLLM(judge, name='s-judge'),
  }
