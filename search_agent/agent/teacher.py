"""A programmatic teacher: an LLM-protocol stand-in that follows the evidence.

Without a teacher LLM, demonstrations still come from the real environment:
`ProgrammaticTeacher` answers one task by searching, in order, for each page
of the task's evidence path (`meta['evidence_path']` when synthesis wrote
one, else `evidence`), optionally reading the page it found with `visit`
(every page, or only one whose search results lack what the next step
needs: `TeacherConfig.visit_when`), and
answering with the answer's surface form as it appears in what it read (or
saying it did not find it, which the filters then reject as wrong). Every
call goes through the real harness and tools: it only writes text, the ReAct
loop parses and runs it.

Some rollouts start with a broken call (bad JSON, or a tool name that does
not exist), read the error observation and recover with the right call, so
the invalid-turn loss masks of SFT are exercised. It is a stand-in, named as
such in manifests ('programmatic-teacher'); any LLM behind the same protocol
(an OpenAI-compatible endpoint) replaces it.
"""

import dataclasses
import json
import random
import re
from typing import Sequence

from search_agent.agent import task as task_lib
from search_agent.llm import protocol

NAME = 'programmatic-teacher'
NOT_FOUND = 'I could not find the answer'
VISIT_WHEN = ('always', 'missing')
_RESULT_RE = re.compile(r'^\[(r\d+)\] (.+)$', re.MULTILINE)
_PAREN_RE = re.compile(r'\s*\([^)]*\)\s*$')
# Broken first calls a recovering rollout makes: parse-level errors, so the
# turn is `invalid` (context, no loss) and the loop answers with an error.
FAULTS = ('bad_json', 'unknown_tool')


@dataclasses.dataclass(frozen=True, kw_only=True)
class TeacherConfig:
  """How the programmatic teacher behaves.

  Attributes:
    visit: Read each evidence page with `visit` after finding it (when the
      toolbox offers visit); otherwise answer from search snippets. The
      visit's goal is the question.
    visit_when: With `visit`: 'always' reads every page found; 'missing'
      only a page whose search results lack what the next step needs (the
      answer on the last page, the next page's title before it), so the
      demonstrations show when reading a page is worth a call: on `:learn`'s
      held-out tasks the title search's snippets hold the answer for 167 of
      200 and a visit of the page for 30 more.
    recovery_rate: Fraction of rollouts whose first call is broken and
      followed by the corrected call.
    think: Write a one-line `<think>` before each action.
    quote_rate: Fraction of rollouts whose first query for a page is the
      title as a "quoted phrase" (the others search it plain first).
    max_retries: Other queries tried for a page search did not return.
    value_space: Write a space before the first word of each value the
      model copies (the query's title, the final answer), so that word
      tokenizes as it does inside the question and the observations: a
      byte-level BPE gives ' Fred' there but '["' + 'F' + 'red' at the start
      of a JSON string, so without it a small model must learn a different
      spelling of every name instead of copying tokens. The search query and
      the graded answer are read with surrounding spaces stripped.
    name_relation: Before the answer, a `<think>` naming what the question
      asks for, from the task's last relation ('The answer is the date of
      death.'; synthesis writes `meta['relations']`), even when `think` is
      off: the answer then follows words that say which value of the
      observation it is, instead of a relation a small model must recall
      from the question far back (one page's snippet often holds the birth
      date, the death date and the nationality together). The model learns
      to write the line from the question; nothing of the task leaks into
      an eval. Tasks without relations get no line.
    question_query: The first query of the first page is the question itself
      (then the title, if that page was not among the results), so the model
      copies the whole user turn instead of cutting the entity's name out of
      it. BM25 finds the page as often, but the tiny model garbles the
      longer copy, so it is off in every pipeline variant
      (docs/experiments/learning-signal.md).
  """

  visit: bool = False
  visit_when: str = 'always'
  recovery_rate: float = 0.2
  think: bool = False
  quote_rate: float = 0.5
  max_retries: int = 1
  value_space: bool = False
  name_relation: bool = False
  question_query: bool = False

  def __post_init__(self):
    if self.visit_when not in VISIT_WHEN:
      raise ValueError(
          f'visit_when must be one of {VISIT_WHEN}, got {self.visit_when!r}'
      )
    for name in ('recovery_rate', 'quote_rate'):
      if not 0.0 <= getattr(self, name) <= 1.0:
        raise ValueError(f'{name} must be in [0, 1], got {getattr(self, name)}')


def display_title(title: str) -> str:
  """A page title without its trailing '(disambiguation)' part."""
  return _PAREN_RE.sub('', title).strip() or title


def evidence_path(task: task_lib.Task) -> tuple[str, ...]:
  """Ordered page titles the task's answer is read from."""
  path = task.meta.get('evidence_path') or task.evidence
  titles = []
  for hop in path:
    titles.append(hop.get('title', '') if isinstance(hop, dict) else str(hop))
  titles = tuple(t for t in titles if t)
  if not titles:
    raise ValueError(
        f'task {task.id} has no evidence path: set evidence (page titles) or'
        " meta['evidence_path']"
    )
  return titles


def relation_thought(task: task_lib.Task) -> str | None:
  """'The answer is the date of death.' from the task's last relation."""
  relations = task.meta.get('relations') or ()
  relation = str(relations[-1]).replace('_', ' ').strip() if relations else ''
  return f'The answer is the {relation}.' if relation else None


def _think_block(thought: str) -> str:
  return f'<think>\n{thought}\n</think>\n'


def _call(name: str, arguments: dict) -> str:
  body = json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)
  return f'<tool_call>\n{body}\n</tool_call>'


def _broken(fault: str, name: str, arguments: dict) -> str:
  if fault == 'bad_json':
    body = json.dumps({'name': name, 'arguments': arguments})
    return f'<tool_call>\n{body[:-1]}\n</tool_call>'  # the last brace lost
  return _call(f'web_{name}', arguments)  # a tool that does not exist


def find_answer(task: task_lib.Task, texts: Sequence[str]) -> str | None:
  """The answer (or an alias) as written in the texts read, if it is there."""
  for form in (task.answer, *task.aliases):
    if not form.strip():
      continue
    for text in texts:
      at = text.lower().find(form.lower())
      if at >= 0:
        return text[at : at + len(form)]
  return None


class ProgrammaticTeacher:
  """Plays one rollout of one task (not shared between rollouts)."""

  def __init__(
      self,
      task: task_lib.Task,
      config: TeacherConfig = TeacherConfig(),
      *,
      seed: int | str = 0,
      tools: Sequence[str] = ('search', 'visit'),
  ):
    self.name = NAME
    self.task = task
    self.config = config
    self.path = evidence_path(task)
    self.tools = tuple(tools)
    rng = random.Random(f'{task.id}/{seed}')
    self.fault = (
        rng.choice(FAULTS) if rng.random() < config.recovery_rate else None
    )
    self.quote_first = rng.random() < config.quote_rate

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    return [protocol.Completion(text=self.reply(messages))] * params.n

  def _queries(self, hop: int) -> list[str]:
    plain = self._spaced(display_title(self.path[hop]))
    if self.config.question_query and hop == 0:
      return [self._spaced(self.task.question), plain]
    quoted = f'"{plain}"'
    return [quoted, plain] if self.quote_first else [plain, quoted]

  def _plan(self, messages: Sequence[protocol.Message]) -> tuple[str, dict]:
    """The next (tool, arguments), or ('answer', {}) when the path is done."""
    hop, tries, found, read = 0, 0, None, []
    for m in messages:
      if m['role'] != 'tool' or m.get('name') == 'error':
        continue
      text = m.get('content', '')
      read.append(text)
      if m.get('name') == 'search':
        title = self.path[hop]
        refs = {t.strip(): r for r, t in _RESULT_RE.findall(text)}
        found = refs.get(title)
        tries += 1
        if found is None and tries <= self.config.max_retries:
          continue  # search again with the other query
        if found is None or not self._visits(hop, read):
          hop, tries, found = hop + 1, 0, None
      elif m.get('name') == 'visit':
        hop, tries, found = hop + 1, 0, None
      if hop >= len(self.path):
        return 'answer', {}
    if found is not None:
      return 'visit', {'ref_id': [found], 'goal': self.task.question}
    queries = self._queries(hop)
    return 'search', {'query': [queries[min(tries, len(queries) - 1)]]}

  def _visits(self, hop: int, read: Sequence[str]) -> bool:
    """Whether to read the page of `hop`, found in the last of `read`."""
    if not (self.config.visit and 'visit' in self.tools):
      return False
    if self.config.visit_when == 'always':
      return True
    if hop + 1 < len(self.path):
      following = display_title(self.path[hop + 1])
      return not any(following in text for text in read)
    return find_answer(self.task, read) is None

  def reply(self, messages: Sequence[protocol.Message]) -> str:
    """The next assistant message for the conversation so far."""
    tool, arguments = self._plan(messages)
    errors = sum(m.get('name') == 'error' for m in messages)
    if tool == 'answer':
      read = [m.get('content', '') for m in messages if m['role'] == 'tool']
      answer = find_answer(self.task, read) or NOT_FOUND
      named = relation_thought(self.task) if self.config.name_relation else None
      thought = (
          _think_block(named)
          if named
          else self._think('I have read the evidence.')
      )
      return thought + f'<answer>{self._spaced(answer)}</answer>'
    if tool == 'search':
      thought = f'Search for {arguments["query"][0].strip()}.'
    else:
      thought = f'Read {arguments["ref_id"][0]}.'
    first = not any(m['role'] == 'assistant' for m in messages)
    if self.fault and first and not errors:
      return self._think(thought) + _broken(self.fault, tool, arguments)
    return self._think(thought) + _call(tool, arguments)

  def _spaced(self, value: str) -> str:
    return f' {value}' if self.config.value_space else value

  def _think(self, thought: str) -> str:
    return _think_block(thought) if self.config.think else ''
